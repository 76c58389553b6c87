#include "infer/export_bert.h"

#include <sstream>
#include <stdexcept>

#include "datasets/special_ids.h"
#include "infer/twin_transformer_source.h"
#include "models/bert/electra.h"

namespace nlpzoo {

namespace {

using twin_source::linear;
using twin_source::P;

twin_source::LayerShape layer_shape(const BertOptions& o) {
  twin_source::LayerShape shape;
  shape.d_model = o.d_model();
  shape.num_heads = o.num_heads();
  shape.activation = o.activation();
  shape.pre_norm = o.pre_norm();
  shape.max_positions = o.max_positions();
  shape.layer_norm_eps = o.layer_norm_eps();
  return shape;
}

// The body of a method on (tokens, segments) up to the embedded input x [B, S, E]: the input
// checks, the key masks and BertEmbeddingsImpl::forward, normalised over `embeddings`' width
// (the embeddings' own, also where a narrower ELECTRA generator reads them).
void embed_lines(twin_source::Source& src, const twin_source::Source& embeddings, const BertOptions& o) {
  src.line() << "assert tokens.dim() == 2 and segments.size() == tokens.size(), "
                "\"tokens and segments must both be [B, S] int64\"\n";
  src.line() << "B = tokens.size(0)\n";
  src.line() << "S = tokens.size(1)\n";
  src.line() << "assert S <= " << o.max_positions() << ", \"sequence longer than max_positions ("
             << o.max_positions() << ")\"\n";
  src.line() << "allowed = torch.ne(tokens, self.pad_id).unsqueeze(1).unsqueeze(1)\n";
  src.mask_lines();
  // Same order of sums as the eager embeddings: token + position, then + segment.
  src.line() << "x = torch.embedding(" << P("bert.embeddings.token.weight") << ", tokens) + "
             << P("bert.embeddings.position.weight") << "[0:S]\n";
  src.line() << "x = x + torch.embedding(" << P("bert.embeddings.segment.weight") << ", segments)\n";
  src.line() << "x = " << embeddings.layer_norm("x", "bert.embeddings.norm") << "\n";
}

// The generated source of a BERT twin, with the encode method every BERT twin has:
// BertEmbeddingsImpl::forward, then the encoder with padding_mask (see the header).
twin_source::Source encode_source(const BertOptions& o) {
  twin_source::Source src(layer_shape(o));
  src.raw() << "def encode(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
  embed_lines(src, src, o);
  src.encoder_stack("bert.encoder", o.num_layers(), "");
  src.line() << "return x\n\n";
  return src;
}

// The attributes every BERT twin has (see the header).
void add_bert_attributes(TwinSpec& spec, const BertOptions& o) {
  spec.add_int("vocab_size", o.vocab_size())
      .add_int("d_model", o.d_model())
      .add_int("num_heads", o.num_heads())
      .add_int("num_layers", o.num_layers())
      .add_int("ffn_dim", o.ffn_dim())
      .add_int("max_positions", o.max_positions())
      .add_int("type_vocab_size", o.type_vocab_size())
      .add_string("activation", to_string(o.activation()))
      .add_bool("pre_norm", o.pre_norm())
      .add_int("pad_id", o.pad_id())
      .add_int("cls_id", kClsId)
      .add_int("sep_id", kSepId)
      .add_int("mask_id", kMaskId);
}

// README lines that encode `sentence` as the twin reads it: ids = [CLS] pieces [SEP], tokens [1, S].
std::string python_tokens(const std::string& sentence) {
  return "import sentencepiece as spm\n"
         "sp = spm.SentencePieceProcessor(model_proto=files['spm.model'])\n"
         "ids = [" + std::to_string(kClsId) + "] + sp.encode('" + sentence + "') + [" + std::to_string(kSepId) + "]\n"
         "tokens = torch.tensor([ids])\n";
}

// What every BERT export's README.txt starts with: `what`, the sizes, the special ids, the input layout.
std::string readme_header(const BertOptions& o, const std::string& what) {
  std::ostringstream s;
  s << "nlpzoo BERT (" << what << "), TorchScript export\n"
    << "d_model=" << o.d_model() << " heads=" << o.num_heads() << " layers=" << o.num_layers()
    << " ffn_dim=" << o.ffn_dim() << " activation=" << to_string(o.activation())
    << " norm=" << (o.pre_norm() ? "pre" : "post") << " max_positions=" << o.max_positions()
    << " type_vocab_size=" << o.type_vocab_size() << " vocab_size=" << o.vocab_size() << "\n\n"
    << "Token ids (spm.model pieces): PAD=" << o.pad_id() << " UNK=" << kUnkId << " [CLS]=" << kClsId
    << " [SEP]=" << kSepId << " [MASK]=" << kMaskId << ".\n"
    << "Input: [CLS] A [SEP] (segments 0) or [CLS] A [SEP] B [SEP] (segments 0 for [CLS] A [SEP], 1 for B [SEP]),\n"
    << "at most max_positions ids, rows padded at the end with PAD (never attended to).\n\n";
  return s.str();
}

TwinSpec bert_spec(BertForPreTrainingImpl& model) {
  const BertOptions& o = model.bert->options();
  TwinSpec spec("script_bert", "nlpzoo_bert");
  spec.hold(model);
  add_bert_attributes(spec, o);
  // mlm_logits: BertMlmHeadImpl::forward at every position.
  auto src = encode_source(o);
  src.raw() << "def mlm_logits(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
  src.line() << "h = self.encode(tokens, segments)\n";
  src.line() << "h = " << src.layer_norm("torch.gelu(" + linear("h", "mlm.dense") + ")", "mlm.norm") << "\n";
  src.line() << "return torch.linear(h, " << P("bert.embeddings.token.weight") << ", " << P("mlm.bias") << ")\n";
  spec.source = src.str();
  return spec;
}

TwinSpec bert_classifier_spec(BertModelImpl& bert, BertClassificationHeadImpl& head,
                              const std::vector<std::string>& labels) {
  const BertOptions& o = bert.options();
  const auto& w = head.output->weight;  // [num_labels, d_model]
  if (w.size(1) != o.d_model())
    throw std::invalid_argument("script_bert_classifier: the head reads " + std::to_string(w.size(1)) +
                                " features but the encoder's d_model is " + std::to_string(o.d_model()));
  TwinSpec spec("script_bert_classifier", "nlpzoo_bert_classifier");
  add_classifier_outputs(spec, labels, w.size(0));
  spec.hold(bert, "bert").hold(head, "head");
  add_bert_attributes(spec, o);
  // forward: BertPoolerImpl on h_[CLS], then BertClassificationHeadImpl (no dropout in eval).
  auto src = encode_source(o);
  src.raw() << "def forward(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
  src.line() << "pooled = torch.tanh(" << linear("self.encode(tokens, segments).select(1, 0)", "bert.pooler.dense")
             << ")\n";
  src.line() << "return " << linear("pooled", "head.output") << "\n\n";
  src.raw() << twin_predict_source("tokens: Tensor, segments: Tensor", "tokens, segments", labels.empty());
  spec.source = src.str();
  return spec;
}

// ELECTRA: the discriminator's encode and replaced_logits, and the generator's mlm_logits over
// the shared embeddings (models/bert/electra.h).
TwinSpec electra_spec(ElectraForPreTrainingImpl& model) {
  const BertOptions& o = model.bert->options();
  const BertOptions& g = model.generator->options();
  TwinSpec spec("script_electra", "nlpzoo_electra");
  spec.hold(model);
  add_bert_attributes(spec, o);
  spec.add_int("generator_d_model", g.d_model())
      .add_int("generator_num_heads", g.num_heads())
      .add_int("generator_ffn_dim", g.ffn_dim());
  auto src = encode_source(o);
  // replaced_logits: ElectraDiscriminatorHeadImpl at every position.
  src.raw() << "def replaced_logits(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
  src.line() << "h = torch.gelu(" << linear("self.encode(tokens, segments)", "discriminator_predictions.dense") << ")\n";
  src.line() << "return " << linear("h", "discriminator_predictions.output") << ".squeeze(-1)\n\n";
  // mlm_logits: ElectraGeneratorImpl::mlm_all; its layers are the generator's width, its
  // embeddings and output LayerNorm the discriminator's.
  twin_source::Source gen(layer_shape(g));
  gen.raw() << "def mlm_logits(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
  embed_lines(gen, src, o);
  if (model.generator->embeddings_project) gen.line() << "x = " << linear("x", "generator.embeddings_project") << "\n";
  gen.encoder_stack("generator.encoder", g.num_layers(), "");
  gen.line() << "x = "
             << src.layer_norm("torch.gelu(" + linear("x", "generator.predictions.dense") + ")",
                               "generator.predictions.norm")
             << "\n";
  gen.line() << "return torch.linear(x, " << P("bert.embeddings.token.weight") << ", " << P("generator.predictions.bias")
             << ")\n";
  spec.source = src.str() + gen.str();
  return spec;
}

}  // namespace

torch::jit::Module script_bert(BertForPreTrainingImpl& model) { return build_twin(bert_spec(model)); }

torch::jit::Module script_bert_classifier(BertModelImpl& bert, BertClassificationHeadImpl& head,
                                          const std::vector<std::string>& labels) {
  return build_twin(bert_classifier_spec(bert, head, labels));
}

torch::jit::Module script_electra(ElectraForPreTrainingImpl& model) { return build_twin(electra_spec(model)); }

std::string electra_export_readme(const BertOptions& o, const BertOptions& generator) {
  return readme_header(o, "ELECTRA pre-trained: the discriminator, and its generator") +
         "Generator: d_model=" + std::to_string(generator.d_model()) + " heads=" +
         std::to_string(generator.num_heads()) + " ffn_dim=" + std::to_string(generator.ffn_dim()) +
         ", sharing the discriminator's embeddings.\n"
         "Methods (batch-first; V = vocab_size):\n"
         "  encode(tokens[B,S] int64, segments[B,S] int64) -> hidden[B,S,d_model]: the discriminator, the\n"
         "      encoder to fine-tune\n"
         "  replaced_logits(tokens[B,S] int64, segments[B,S] int64) -> logits[B,S]: the log-odds that each\n"
         "      token was replaced (sigmoid > 0.5: replaced)\n"
         "  mlm_logits(tokens[B,S] int64, segments[B,S] int64) -> logits[B,S,V]: the generator, a masked LM\n"
         "      at every position; read the rows where tokens == [MASK] to fill masks.\n\n" +
         twin_readme_python_footer(
             {"config.ini", "spm.model"},
             python_tokens("In the beginning God created the heaven and the earth.") +
             "print(torch.sigmoid(m.replaced_logits(tokens, torch.zeros_like(tokens)))[0])");
}

void export_electra(const std::string& out_path, ElectraForPreTrainingImpl& model,
                    const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, electra_spec(model), extra_files,
              electra_export_readme(model.bert->options(), model.generator->options()), "export_electra");
}

std::string bert_export_readme(const BertOptions& o) {
  return readme_header(o, "masked-LM pre-trained encoder") +
         "Methods (batch-first; V = vocab_size):\n"
         "  encode(tokens[B,S] int64, segments[B,S] int64) -> hidden[B,S,d_model]\n"
         "  mlm_logits(tokens[B,S] int64, segments[B,S] int64) -> logits[B,S,V]: the MLM head at every\n"
         "      position (softmax over V); read the rows where tokens == [MASK] to fill masks.\n\n" +
         twin_readme_python_footer(
             {"config.ini", "spm.model"},
             python_tokens("In the beginning God created the [MASK] and the earth.") +
             "logits = m.mlm_logits(tokens, torch.zeros_like(tokens))[0, ids.index(" + std::to_string(kMaskId) + ")]\n"
             "print([sp.id_to_piece(i) for i in logits.topk(5).indices.tolist()])");
}

std::string bert_classifier_export_readme(const BertOptions& o, const std::vector<std::string>& labels) {
  const std::string cls = std::to_string(kClsId), sep = std::to_string(kSepId);
  return readme_header(o, "fine-tuned classifier: pooled [CLS] -> linear head") +
         "encode(tokens[B,S] int64, segments[B,S] int64) -> hidden[B,S,d_model]: the encoder's final\n"
         "states; forward pools the [CLS] row (tanh dense) and applies the head.\n" +
         twin_classifier_readme(labels, "tokens[B,S] int64, segments[B,S] int64",
                                "text = 'a charming and often affecting journey.'  # prepared as config.ini says",
                                "tokens = torch.tensor([[" + cls + "] + sp.encode(text) + [" + sep +
                                    "]])  # a pair: [" + cls + "] + A + [" + sep + "] + B + [" + sep + "]\n"
                                    "segments = torch.zeros_like(tokens)  # a pair: 1 on B [SEP]",
                                "tokens, segments");
}

void export_bert_classifier(const std::string& out_path, BertModelImpl& bert, BertClassificationHeadImpl& head,
                            const std::vector<std::string>& labels,
                            const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, bert_classifier_spec(bert, head, labels), extra_files,
              bert_classifier_export_readme(bert.options(), labels), "export_bert_classifier");
}

void export_bert(const std::string& out_path, BertForPreTrainingImpl& model,
                 const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, bert_spec(model), extra_files, bert_export_readme(model.bert->options()), "export_bert");
}

}  // namespace nlpzoo
