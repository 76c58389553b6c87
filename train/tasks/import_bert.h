#pragma once
// `nlpzoo import bert`: a published BERT checkpoint in Hugging Face's folder layout
// (train/hf_bert_import.h) written as an nlpzoo masked_lm run folder, which `train --init_from`,
// `fill-mask`, `evaluate` and `export` then use like one nlpzoo trained:
//   RUN/config.ini                 the masked_lm config of the checkpoint's sizes (normalize_words =
//                                  false: the WordPiece tokenizer does BERT's own normalization)
//   RUN/spm.model                  the tokenizer: WordPiece over vocab.txt (datasets/wordpiece_model.h)
//   RUN/checkpoint_last.pt, RUN/checkpoint_best.pt   the weights (no optimizer state), step 0
// The vocabulary is relabelled to nlpzoo's special ids and the token-embedding rows and MLM
// output bias are permuted alike, so every output is the checkpoint's.
#include <string>

#include "models/bert/hf_bert.h"

namespace nlpzoo {

struct ImportedBert {
  HfBertLoadReport report;
  std::string checkpoint;  // RUN/checkpoint_last.pt
  int64_t vocab_size = 0, d_model = 0, num_layers = 0;
  bool nsp = false;  // the checkpoint had an NSP head (and so a trained pooler)
};

/// Imports `hf_dir` into `run_dir` (created; refused when it holds a checkpoint already, or
/// another process holds it). Throws UserError as import_hf_bert, and when config.json's
/// vocab_size differs from vocab.txt's number of tokens.
ImportedBert import_bert_run(const std::string& hf_dir, const std::string& run_dir);

}  // namespace nlpzoo
