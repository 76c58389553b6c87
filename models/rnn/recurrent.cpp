#include "models/rnn/recurrent.h"

#include "core/enum_names.h"
#include "models/linear.h"

#include <stdexcept>

namespace nlpzoo {

namespace rnn_utils = torch::nn::utils::rnn;

CellType parse_cell_type(const std::string& name) { return parse_enum(name, kCellNames, "cell type"); }

std::string to_string(CellType cell) { return enum_name(cell, kCellNames); }

RecurrentState RecurrentState::from_batch_major(const torch::Tensor& h, const torch::Tensor& c) {
  RecurrentState s;
  s.h = h.transpose(0, 1).contiguous();
  if (c.defined()) s.c = c.transpose(0, 1).contiguous();
  return s;
}

RecurrentImpl::RecurrentImpl(const RecurrentOptions& o) : options_(o) {
  switch (o.cell()) {
    case CellType::kRnn:
      rnn_ = register_module("rnn", torch::nn::RNN(torch::nn::RNNOptions(o.input_size(), o.hidden_size())
                                                       .num_layers(o.num_layers())
                                                       .dropout(o.dropout())
                                                       .bidirectional(o.bidirectional())
                                                       .batch_first(true)));
      break;
    case CellType::kGru:
      gru_ = register_module("rnn", torch::nn::GRU(torch::nn::GRUOptions(o.input_size(), o.hidden_size())
                                                       .num_layers(o.num_layers())
                                                       .dropout(o.dropout())
                                                       .bidirectional(o.bidirectional())
                                                       .batch_first(true)));
      break;
    case CellType::kLstm:
      lstm_ = register_module("rnn", torch::nn::LSTM(torch::nn::LSTMOptions(o.input_size(), o.hidden_size())
                                                         .num_layers(o.num_layers())
                                                         .dropout(o.dropout())
                                                         .bidirectional(o.bidirectional())
                                                         .batch_first(true)));
      break;
  }
}

std::vector<torch::Tensor> RecurrentImpl::flat_weights() const {
  if (rnn_) return rnn_->all_weights();
  if (gru_) return gru_->all_weights();
  return lstm_->all_weights();
}

std::tuple<torch::Tensor, RecurrentState> RecurrentImpl::step_with_gemv(const torch::Tensor& x,
                                                                        const RecurrentState& state,
                                                                        const std::vector<torch::Tensor>& weights) {
  const int64_t L = options_.num_layers(), B = x.size(0), H = options_.hidden_size();
  auto h0 = state.h.defined() ? state.h : torch::zeros({L, B, H}, x.options());
  torch::Tensor c0;
  if (lstm_) c0 = state.c.defined() ? state.c : torch::zeros({L, B, H}, x.options());
  auto input = x.select(1, 0);  // [B, in]
  std::vector<torch::Tensor> hs, cs;
  for (int64_t l = 0; l < L; ++l) {
    auto gi = nlpzoo::linear(input, weights[4 * l], weights[4 * l + 2]);  // W_ih x + b_ih: [B, gates*H]
    auto gh = nlpzoo::linear(h0[l], weights[4 * l + 1], weights[4 * l + 3]);
    auto h = h0[l];
    if (gru_) {
      auto i = gi.chunk(3, 1), g = gh.chunk(3, 1);
      auto r = g[0].add_(i[0]).sigmoid_();
      auto z = g[1].add_(i[1]).sigmoid_();
      auto n = i[2].add(g[2].mul_(r)).tanh_();
      h = (h - n).mul_(z).add_(n);  // (1 - z) n + z h
    } else if (lstm_) {
      auto g = gh.add_(gi).chunk(4, 1);
      auto in = g[0].sigmoid_(), forget = g[1].sigmoid_(), cell = g[2].tanh_(), out = g[3].sigmoid_();
      auto c = forget.mul(c0[l]).add_(in.mul(cell));  // c' = f c + i g
      h = out.mul(c.tanh());                          // h' = o tanh(c')
      cs.push_back(c);
    } else {
      h = gh.add_(gi).tanh_();  // h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
    }
    hs.push_back(h);
    input = h;
  }
  RecurrentState next;
  next.h = torch::stack(hs);
  if (lstm_) next.c = torch::stack(cs);
  return {input.unsqueeze(1), next};
}

std::tuple<torch::Tensor, RecurrentState> RecurrentImpl::forward(const torch::Tensor& x,
                                                                 const torch::Tensor& lengths,
                                                                 const RecurrentState& state) {
  const int64_t T = x.size(1);
  if (T == 1 && !lengths.defined() && !options_.bidirectional() && !is_training()) {
    const auto weights = flat_weights();
    if (linear_uses_gemv(x, weights[1])) return step_with_gemv(x, state, weights);
  }
  RecurrentState out_state;
  torch::optional<std::tuple<torch::Tensor, torch::Tensor>> hc;
  if (lstm_ && state.h.defined()) hc = std::make_tuple(state.h, state.c);
  torch::Tensor out;
  if (lengths.defined()) {
    auto packed = rnn_utils::pack_padded_sequence(x, lengths.to(torch::kCPU), /*batch_first=*/true,
                                                  /*enforce_sorted=*/false);
    auto unpack = [&](const rnn_utils::PackedSequence& p) {
      return std::get<0>(rnn_utils::pad_packed_sequence(p, /*batch_first=*/true, /*padding_value=*/0.0,
                                                        /*total_length=*/T));
    };
    if (lstm_) {
      auto [o, s] = lstm_->forward_with_packed_input(packed, hc);
      out = unpack(o);
      std::tie(out_state.h, out_state.c) = s;
    } else {
      auto [o, h] = gru_ ? gru_->forward_with_packed_input(packed, state.h)
                         : rnn_->forward_with_packed_input(packed, state.h);
      out = unpack(o);
      out_state.h = h;
    }
  } else if (lstm_) {
    auto [o, s] = lstm_->forward(x, hc);
    out = o;
    std::tie(out_state.h, out_state.c) = s;
  } else {
    std::tie(out, out_state.h) = gru_ ? gru_->forward(x, state.h) : rnn_->forward(x, state.h);
  }
  return {out, out_state};
}

}  // namespace nlpzoo
