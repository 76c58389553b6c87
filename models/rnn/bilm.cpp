#include "models/rnn/bilm.h"

#include <stdexcept>

namespace nlpzoo {

namespace F = torch::nn::functional;

BiLanguageModelImpl::BiLanguageModelImpl(const BiLanguageModelOptions& o) : options_(o) {
  if (o.vocab_size() <= 0 || o.embed_dim() <= 0 || o.hidden_size() <= 0 || o.num_layers() <= 0)
    throw std::invalid_argument("bidirectional LM: vocab_size, embed_dim, hidden_size and num_layers must be positive");
  embedding = register_module(
      "embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size(), o.embed_dim()).padding_idx(o.pad_id())));
  const auto stack = [&](const std::string& name, torch::nn::ModuleList& lstm, torch::nn::ModuleList& proj) {
    lstm = register_module(name + "_lstm", torch::nn::ModuleList());
    proj = register_module(name + "_proj", torch::nn::ModuleList());
    for (int64_t l = 0; l < o.num_layers(); ++l) {
      lstm->push_back(Recurrent(RecurrentOptions(CellType::kLstm, o.embed_dim(), o.hidden_size())));
      proj->push_back(torch::nn::Linear(torch::nn::LinearOptions(o.hidden_size(), o.embed_dim()).bias(false)));
    }
  };
  stack("forward", forward_lstm, forward_proj);
  stack("backward", backward_lstm, backward_proj);
  output = register_module("output", torch::nn::Linear(o.embed_dim(), o.vocab_size()));
  dropout_ = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

std::vector<torch::Tensor> BiLanguageModelImpl::direction(const torch::Tensor& x, torch::nn::ModuleList& lstm,
                                                          torch::nn::ModuleList& proj) {
  std::vector<torch::Tensor> out;
  torch::Tensor h = x;
  for (size_t l = 0; l < lstm->size(); ++l) {
    // Padding follows each row's tokens, so a left-to-right pass never reads it before them.
    auto states = std::get<0>(lstm->ptr<RecurrentImpl>(l)->forward(l == 0 ? h : dropout_->forward(h)));  // [B, S, H]
    auto next = proj->ptr<torch::nn::LinearImpl>(l)->forward(states);                                    // [B, S, d]
    h = l == 0 ? next : next + h;
    out.push_back(h);
  }
  return out;
}

std::vector<torch::Tensor> BiLanguageModelImpl::layers(const torch::Tensor& sequences, const torch::Tensor& lengths) {
  const auto x = embedding->forward(sequences);  // [B, S, d]
  const auto input = dropout_->forward(x);
  const auto forward = direction(input, forward_lstm, forward_proj);
  const auto backward = direction(reverse_padded(input, lengths), backward_lstm, backward_proj);
  std::vector<torch::Tensor> out{torch::cat({x, x}, /*dim=*/-1)};
  for (size_t l = 0; l < forward.size(); ++l)
    out.push_back(torch::cat({forward[l], reverse_padded(backward[l], lengths)}, /*dim=*/-1));  // [B, S, 2d]
  return out;
}

BiLmLoss BiLanguageModelImpl::loss(const torch::Tensor& sequences, const torch::Tensor& lengths) {
  const int64_t d = options_.embed_dim(), S = sequences.size(1);
  const auto top = layers(sequences, lengths).back();  // [B, S, 2d]
  // Prediction j of a row pairs position j with j + 1; a row of length n makes n - 1 of them.
  const auto positions = torch::arange(S - 1, lengths.options());
  const auto valid = positions.unsqueeze(0) < (lengths - 1).unsqueeze(1);  // [B, S-1]
  const auto nll = [&](const torch::Tensor& states, const torch::Tensor& targets) {
    return F::cross_entropy(output->forward(dropout_->forward(states.index({valid}))), targets.index({valid}),
                            F::CrossEntropyFuncOptions().reduction(torch::kSum));
  };
  BiLmLoss out;
  // Forward: the state at j has read tokens 0..j and predicts j + 1.
  out.forward_nll = nll(top.narrow(2, 0, d).narrow(1, 0, S - 1), sequences.narrow(1, 1, S - 1));
  // Backward: the state at j + 1 has read tokens n-1..j+1 and predicts j.
  out.backward_nll = nll(top.narrow(2, d, d).narrow(1, 1, S - 1), sequences.narrow(1, 0, S - 1));
  out.predictions = valid.sum().item<int64_t>();
  return out;
}

torch::Tensor reverse_padded(const torch::Tensor& x, const torch::Tensor& lengths) {
  const int64_t S = x.size(1);
  const auto t = torch::arange(S, lengths.options()).unsqueeze(0);  // [1, S]
  const auto n = lengths.unsqueeze(1);                              // [B, 1]
  auto index = torch::where(t < n, n - 1 - t, t);                   // [B, S]
  for (int64_t dim = 2; dim < x.dim(); ++dim) index = index.unsqueeze(-1);
  return x.gather(1, index.expand_as(x));
}

}  // namespace nlpzoo
