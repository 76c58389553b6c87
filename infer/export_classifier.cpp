#include "infer/export_classifier.h"

#include <sstream>
#include <stdexcept>

#include "datasets/special_ids.h"
#include "infer/export_lm.h"
#include "infer/script_twin.h"

namespace nlpzoo {

namespace {

const char* kForward = "def forward(self, tokens: Tensor) -> Tensor:\n";

// Every classifier's first lines: each row's length n (non-pad tokens, at least 1:
// TextClassifierImpl::lengths), the mask of its first n positions (length_mask) and the
// embeddings x [B, T, E].
const char* kLengthsMaskEmbed =
    "    lengths = torch.clamp_min(torch.sum(torch.ne(tokens, self.pad_id), 1), 1)\n"
    "    positions = torch.arange(tokens.size(1), device=tokens.device)\n"
    "    mask = torch.lt(positions.unsqueeze(0), lengths.unsqueeze(1))\n"
    "    x = torch.embedding(self.embedding__weight, tokens)\n";

// masked_mean (models/classifier/pooling.h) of `x` [B, T, F] over `mask` into s [B, F].
std::string masked_mean(const std::string& x) {
  return "    w = mask.unsqueeze(-1).to(" + x + ".dtype)\n"
         "    s = torch.sum(" + x + " * w, 1) / torch.clamp_min(torch.sum(w, 1), 1.0)\n";
}

// Every classifier's last line: the output layer on the sentence vector s.
const char* kOutput = "    return torch.linear(s, self.output__weight, self.output__bias)\n\n";

// The recurrent stack of RnnClassifierImpl::states as RecurrentImpl::forward runs it with
// lengths: LibTorch's pack_padded_sequence(enforce_sorted = false) (rows sorted by length,
// descending), the packed aten kernel from zero state, pad_packed_sequence to T positions, rows
// put back in order. Leaves states [B, T, dirs * H] (zeros at padding) and hn [L * dirs, B, H].
std::string rnn_states_source(const ClassifierOptions& o) {
  const int64_t dirs = o.bidirectional() ? 2 : 1, L = o.num_layers(), H = o.hidden_size();
  const std::string bidir = o.bidirectional() ? "True" : "False";
  // has_biases, num_layers, dropout, train, bidirectional
  const std::string tail = ", True, " + std::to_string(L) + ", 0.0, False, " + bidir + ")\n";
  const std::string params = twin_rnn_stack_params("rnn", L, o.bidirectional());
  std::ostringstream s;
  s << "    sorted_lengths, order = torch.sort(lengths, -1, True)\n"
    << "    unorder = torch.empty_like(order).scatter_(0, order, torch.arange(order.size(0), device=order.device))\n"
    << "    data, batch_sizes = torch._pack_padded_sequence(x.index_select(0, order), "
       "sorted_lengths.to(torch.device('cpu')), True)\n"
    << "    h0 = torch.zeros([" << L * dirs << ", tokens.size(0), " << H << "], dtype=x.dtype, device=x.device)\n";
  if (o.cell() == CellType::kLstm)
    s << "    out, hn, cn = torch.lstm(data, batch_sizes, [h0, h0], " << params << tail;
  else
    s << "    out, hn = " << twin_aten_rnn(o.cell()) << "(data, batch_sizes, h0, " << params << tail;
  s << "    padded, _ = torch._pad_packed_sequence(out, batch_sizes, True, 0.0, tokens.size(1))\n"
    << "    states = padded.index_select(0, unorder)\n"
    << "    hn = hn.index_select(1, unorder)\n";
  return s.str();
}

// RnnClassifierImpl::encode's pooling of states / hn into s [B, dirs * H].
std::string rnn_pooling_source(const ClassifierOptions& o) {
  const int64_t dirs = o.bidirectional() ? 2 : 1, L = o.num_layers(), H = o.hidden_size();
  switch (o.pooling()) {
    case Pooling::kLast:  // top_layer_final_state
      return "    s = hn.view([" + std::to_string(L) + ", " + std::to_string(dirs) + ", tokens.size(0), " +
             std::to_string(H) + "]).select(0, " + std::to_string(L - 1) + ").transpose(0, 1).reshape([tokens.size(0), " +
             std::to_string(dirs * H) + "])\n";
    case Pooling::kMax:  // masked_max
      return "    s = torch.amax(states.masked_fill(torch.logical_not(mask).unsqueeze(-1), float('-inf')), [1])\n";
    case Pooling::kMean: return masked_mean("states");
  }
  throw std::logic_error("script_rnn_classifier: unknown pooling");
}

// What every classifier twin has: its tensors, the common attributes and forward's first lines.
TwinSpec classifier_spec(TextClassifierImpl& model, const std::string& who, const std::string& type_name,
                         const std::vector<std::string>& labels) {
  const ClassifierOptions& o = model.options();
  TwinSpec spec(who, type_name);
  spec.hold(model).add_int("vocab_size", o.vocab_size()).add_int("embed_dim", o.embed_dim()).add_int("pad_id", o.pad_id());
  add_classifier_outputs(spec, labels, o.num_classes());
  spec.source = std::string(kForward) + kLengthsMaskEmbed;
  return spec;
}

TwinSpec average_embedding_spec(AverageEmbeddingClassifierImpl& model, const std::vector<std::string>& labels) {
  auto spec = classifier_spec(model, "script_average_embedding_classifier", "nlpzoo_average_embedding_classifier",
                              labels);
  spec.source += masked_mean("x") + kOutput + twin_predict_source("tokens: Tensor", "tokens", labels.empty());
  return spec;
}

// ElmoImpl::forward: the biLM's layers (twin_bilm_layers_source) mixed by ScalarMix, zero past
// each row's length.
std::string elmo_features_source(const ElmoImpl& elmo) {
  const int64_t count = elmo.bilm->options().num_layers() + 1;
  std::ostringstream s;
  s << "def elmo_features(self, tokens: Tensor, lengths: Tensor, mask: Tensor) -> Tensor:\n"
    << "    layers = self.bilm_layers(tokens, lengths)\n"
    << "    w = torch.softmax(self.elmo__mix__scalar_parameters, 0)\n"
    << "    e = w[0] * layers[0]\n";
  for (int64_t j = 1; j < count; ++j) s << "    e = e + w[" << j << "] * layers[" << j << "]\n";
  s << "    e = self.elmo__mix__gamma * e\n"
    << "    return e * mask.unsqueeze(-1).to(e.dtype)\n\n";
  return twin_bilm_layers_source(elmo.bilm->options(), "elmo__bilm__") + s.str();
}

TwinSpec rnn_spec(RnnClassifierImpl& model, const std::vector<std::string>& labels) {
  const ClassifierOptions& o = model.options();
  auto spec = classifier_spec(model, "script_rnn_classifier", "nlpzoo_rnn_classifier", labels);
  spec.add_string("cell", to_string(o.cell()))
      .add_int("hidden_size", o.hidden_size())
      .add_int("num_layers", o.num_layers())
      .add_bool("bidirectional", o.bidirectional())
      .add_string("pooling", to_string(o.pooling()))
      .add_bool("elmo", static_cast<bool>(model.elmo));
  if (model.elmo) spec.source += "    x = torch.cat([x, self.elmo_features(tokens, lengths, mask)], -1)\n";
  spec.source += rnn_states_source(o) + rnn_pooling_source(o) + kOutput +
                 twin_predict_source("tokens: Tensor", "tokens", labels.empty());
  if (model.elmo) spec.source += elmo_features_source(*model.elmo);
  return spec;
}

TwinSpec text_classifier_spec(TextClassifierImpl& model, const std::vector<std::string>& labels) {
  if (auto* average = dynamic_cast<AverageEmbeddingClassifierImpl*>(&model)) return average_embedding_spec(*average, labels);
  if (auto* rnn = dynamic_cast<RnnClassifierImpl*>(&model)) return rnn_spec(*rnn, labels);
  throw std::invalid_argument("script_text_classifier: this classifier type has no TorchScript twin");
}

}  // namespace

torch::jit::Module script_average_embedding_classifier(AverageEmbeddingClassifierImpl& model,
                                                       const std::vector<std::string>& labels) {
  return build_twin(average_embedding_spec(model, labels));
}

torch::jit::Module script_rnn_classifier(RnnClassifierImpl& model, const std::vector<std::string>& labels) {
  return build_twin(rnn_spec(model, labels));
}

torch::jit::Module script_text_classifier(TextClassifierImpl& model, const std::vector<std::string>& labels) {
  return build_twin(text_classifier_spec(model, labels));
}

std::string text_classifier_export_readme(TextClassifierImpl& model, const std::vector<std::string>& labels) {
  const ClassifierOptions& o = model.options();
  std::ostringstream s;
  auto* rnn = dynamic_cast<RnnClassifierImpl*>(&model);
  if (rnn != nullptr)
    s << "nlpzoo sentence classifier (" << (o.bidirectional() ? "bidirectional " : "") << to_string(o.cell())
      << ", " << to_string(o.pooling()) << " pooling" << (rnn->elmo ? ", ELMo features" : "") << "), TorchScript export\n"
      << "vocab_size=" << o.vocab_size() << " embed_dim=" << o.embed_dim() << " hidden_size=" << o.hidden_size()
      << " num_layers=" << o.num_layers() << " directions=" << rnn->num_directions();
  else
    s << "nlpzoo sentence classifier (average of embeddings), TorchScript export\n"
      << "vocab_size=" << o.vocab_size() << " embed_dim=" << o.embed_dim();
  if (rnn != nullptr && rnn->elmo)
    s << " elmo_layers=" << rnn->elmo->bilm->options().num_layers() + 1 << " elmo_dim=" << rnn->elmo->dim()
      << " (a frozen biLM's layers, mixed by learned weights, read beside the embeddings)";
  s << " num_classes=" << o.num_classes() << " pad_id=" << o.pad_id() << "\n"
    << "Input: the SentencePiece ids (spm.model) of the sentence normalized as config.ini says\n"
    << "(lowercase, split_punctuation), each row padded with pad_id; a sentence pair is\n"
    << "A " << kEosId << " B (the ids of A, the end-of-sentence id " << kEosId << ", the ids of B).\n"
    << twin_classifier_readme(labels, "tokens[B,T] int64",
                              "text = \"it 's a charming , often affecting journey .\"  # normalized",
                              "tokens = torch.tensor([sp.encode(text)])  # a pair: sp.encode(a) + [" +
                                  std::to_string(kEosId) + "] + sp.encode(b)",
                              "tokens");
  return s.str();
}

void export_text_classifier(const std::string& out_path, TextClassifierImpl& model,
                            const std::vector<std::string>& labels,
                            const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, text_classifier_spec(model, labels), extra_files, text_classifier_export_readme(model, labels),
              "export_text_classifier");
}

}  // namespace nlpzoo
