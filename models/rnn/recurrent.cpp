#include "models/rnn/recurrent.h"

#include "models/enum_names.h"

#include <stdexcept>

namespace nlpzoo {

namespace rnn_utils = torch::nn::utils::rnn;

namespace {
constexpr EnumNames<CellType, 3> kCellNames = {{{CellType::kRnn, "rnn"}, {CellType::kGru, "gru"}, {CellType::kLstm, "lstm"}}};
}  // namespace

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

std::tuple<torch::Tensor, RecurrentState> RecurrentImpl::forward(const torch::Tensor& x,
                                                                 const torch::Tensor& lengths,
                                                                 const RecurrentState& state) {
  const int64_t T = x.size(1);
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
