#include "infer/export_bert.h"

#include <sstream>

#include "datasets/special_ids.h"
#include "infer/twin_transformer_source.h"

namespace nlpzoo {

namespace {

using twin_source::linear;
using twin_source::P;

// TorchScript source of the twin's methods for these options (see the header for signatures).
std::string methods_source(const BertOptions& o) {
  twin_source::LayerShape shape;
  shape.d_model = o.d_model();
  shape.num_heads = o.num_heads();
  shape.activation = o.activation();
  shape.pre_norm = o.pre_norm();
  shape.max_positions = o.max_positions();
  twin_source::Source src(shape);

  // --- encode: BertEmbeddingsImpl::forward, then the encoder with padding_mask ---------------
  src.raw() << "def encode(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
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
  src.line() << "x = " << src.layer_norm("x", "bert.embeddings.norm") << "\n";
  src.encoder_stack("bert.encoder", o.num_layers(), "");
  src.line() << "return x\n\n";

  // --- mlm_logits: BertMlmHeadImpl::forward at every position ---------------------------------
  src.raw() << "def mlm_logits(self, tokens: Tensor, segments: Tensor) -> Tensor:\n";
  src.line() << "h = self.encode(tokens, segments)\n";
  src.line() << "h = " << src.layer_norm("torch.gelu(" + linear("h", "mlm.dense") + ")", "mlm.norm") << "\n";
  src.line() << "return torch.linear(h, " << P("bert.embeddings.token.weight") << ", " << P("mlm.bias") << ")\n";
  return src.str();
}

}  // namespace

torch::jit::Module script_bert(BertForPreTrainingImpl& model) {
  const BertOptions& o = model.bert->options();
  torch::jit::Module twin("nlpzoo_bert");
  copy_tensors_into(twin, model, "script_bert");
  add_int_attribute(twin, "vocab_size", o.vocab_size());
  add_int_attribute(twin, "d_model", o.d_model());
  add_int_attribute(twin, "num_heads", o.num_heads());
  add_int_attribute(twin, "num_layers", o.num_layers());
  add_int_attribute(twin, "ffn_dim", o.ffn_dim());
  add_int_attribute(twin, "max_positions", o.max_positions());
  add_int_attribute(twin, "type_vocab_size", o.type_vocab_size());
  add_string_attribute(twin, "activation", to_string(o.activation()));
  add_bool_attribute(twin, "pre_norm", o.pre_norm());
  add_int_attribute(twin, "pad_id", o.pad_id());
  add_int_attribute(twin, "cls_id", kClsId);
  add_int_attribute(twin, "sep_id", kSepId);
  add_int_attribute(twin, "mask_id", kMaskId);
  twin.define(methods_source(o));
  twin.eval();
  return twin;
}

std::string bert_export_readme(const BertOptions& o) {
  std::ostringstream s;
  s << "nlpzoo BERT (masked-LM pre-trained encoder), TorchScript export\n"
    << "d_model=" << o.d_model() << " heads=" << o.num_heads() << " layers=" << o.num_layers()
    << " ffn_dim=" << o.ffn_dim() << " activation=" << to_string(o.activation())
    << " norm=" << (o.pre_norm() ? "pre" : "post") << " max_positions=" << o.max_positions()
    << " type_vocab_size=" << o.type_vocab_size() << " vocab_size=" << o.vocab_size() << "\n\n"
    << "Token ids (spm.model pieces): PAD=" << o.pad_id() << " UNK=" << kUnkId << " [CLS]=" << kClsId
    << " [SEP]=" << kSepId << " [MASK]=" << kMaskId << ".\n"
    << "Input: [CLS] A [SEP] (segments 0) or [CLS] A [SEP] B [SEP] (segments 0 for [CLS] A [SEP], 1 for B [SEP]),\n"
    << "at most max_positions ids, rows padded at the end with PAD (never attended to).\n\n"
    << "Methods (batch-first; V = vocab_size):\n"
    << "  encode(tokens[B,S] int64, segments[B,S] int64) -> hidden[B,S,d_model]\n"
    << "  mlm_logits(tokens[B,S] int64, segments[B,S] int64) -> logits[B,S,V]: the MLM head at every\n"
    << "      position (softmax over V); read the rows where tokens == [MASK] to fill masks.\n\n"
    << twin_readme_python_footer(
           {"config.ini", "spm.model"},
           "import sentencepiece as spm\n"
           "sp = spm.SentencePieceProcessor(model_proto=files['spm.model'])\n"
           "ids = [" + std::to_string(kClsId) + "] + sp.encode('In the beginning God created the [MASK] and the earth.') + [" +
               std::to_string(kSepId) + "]\n"
           "tokens = torch.tensor([ids])\n"
           "logits = m.mlm_logits(tokens, torch.zeros_like(tokens))[0, ids.index(" + std::to_string(kMaskId) + ")]\n"
           "print([sp.id_to_piece(i) for i in logits.topk(5).indices.tolist()])");
  return s.str();
}

void export_bert(const std::string& out_path, BertForPreTrainingImpl& model,
                 const std::map<std::string, std::string>& extra_files) {
  save_twin(out_path, script_bert(model), extra_files, bert_export_readme(model.bert->options()), "export_bert");
}

}  // namespace nlpzoo
