#include "train/tasks/import_bert.h"

#include <filesystem>

#include "core/io.h"
#include "datasets/wordpiece_model.h"
#include "train/checkpoint.h"
#include "train/hf_bert_import.h"
#include "train/run_lock.h"
#include "train/tasks/masked_lm_task.h"
#include "train/tasks/registry.h"
#include "train/tasks/train_run.h"

namespace fs = std::filesystem;

namespace nlpzoo {

namespace {

// The masked_lm config that rebuilds `o` (the trainer's and corpus keys keep their defaults).
Config masked_lm_config(const BertOptions& o) {
  Config config = Config::resolve(task_schema("masked_lm"), "", {"--task", "masked_lm"});
  auto bert = bind_options<BertKeys>(config);
  bert.stack.d_model = o.d_model();
  bert.stack.num_heads = o.num_heads();
  bert.stack.ffn_dim = o.ffn_dim();
  bert.stack.dropout = o.dropout();
  bert.stack.attention_dropout = o.attention_dropout();
  bert.num_layers = o.num_layers();
  bert.max_positions = o.max_positions();
  bert.type_vocab_size = o.type_vocab_size();
  bert.layer_norm_eps = o.layer_norm_eps();
  write_options(bert, config);
  auto task = bind_options<MaskedLmOptions>(config);
  task.vocab_size = o.vocab_size();
  task.nsp = o.nsp();
  task.normalize_words = false;
  write_options(task, config);
  return config;
}

}  // namespace

ImportedBert import_bert_run(const std::string& hf_dir, const std::string& run_dir) {
  RunLock lock(run_dir);
  check_run_dir(run_dir, /*resume=*/false);
  auto imported = import_hf_bert(hf_dir);
  const std::string vocab_path = (fs::path(hf_dir) / "vocab.txt").string();
  if (imported.tokenizer.vocab_size() != imported.options.vocab_size())
    throw UserError(vocab_path + " has " + std::to_string(imported.tokenizer.vocab_size()) +
                    " tokens but config.json's vocab_size is " + std::to_string(imported.options.vocab_size()) +
                    "; nlpzoo's model has one embedding row per token, so they must be equal");
  const auto order = nlpzoo_row_order(imported.tokenizer, vocab_path);
  {
    // In place: the module keeps its parameters (a reassigned tensor would not be registered).
    torch::NoGradGuard no_grad;
    const auto rows = torch::tensor(order, torch::kLong);
    auto& model = *imported.model;
    for (auto* p : {&model.bert->embeddings->token->weight, &model.mlm->bias}) p->copy_(p->index_select(0, rows));
  }
  // ([PAD] moved to id 0 with the rows; nlpzoo's model pads there, whatever pad_token_id said.)
  const Config config = masked_lm_config(imported.options);
  const std::string tokenizer = serialize_wordpiece(imported.tokenizer);
  CheckpointContents contents;
  contents.task = "masked_lm";
  contents.config = config.to_ini();
  contents.artifacts = {{"spm.model", tokenizer}};
  ImportedBert out;
  out.checkpoint = (fs::path(run_dir) / "checkpoint_last.pt").string();
  atomic_write_text((fs::path(run_dir) / "spm.model").string(), tokenizer);
  atomic_write_text((fs::path(run_dir) / "config.ini").string(), contents.config);
  save_checkpoint((fs::path(run_dir) / "checkpoint_best.pt").string(), *imported.model, nullptr, contents);
  save_checkpoint(out.checkpoint, *imported.model, nullptr, contents);
  // What any command will do with the folder: rebuild the model from the config and load it.
  load_run(out.checkpoint, torch::kCPU);
  out.report = std::move(imported.report);
  out.vocab_size = imported.options.vocab_size();
  out.d_model = imported.options.d_model();
  out.num_layers = imported.options.num_layers();
  out.nsp = imported.options.nsp();
  return out;
}

}  // namespace nlpzoo
