#include "train/tasks/elmo_features.h"

#include "core/io.h"
#include "train/checkpoint.h"
#include "train/tasks/bilm_task.h"
#include "train/tasks/registry.h"

namespace nlpzoo {

void ElmoKeys::bind(OptionBinder& b) {
  b.field("elmo", elmo,
          "rnn: a bilm run folder whose frozen biLM gives each piece ELMo features (a learned scalar mix of its "
          "layers, Peters et al. 2018) read beside the embeddings; its tokenizer and text form (normalize_words) "
          "become the run's (\"\" = none)");
  b.field("elmo_embed_dim", elmo_embed_dim, "rnn with elmo: the biLM's embed_dim (written from the elmo run)",
          at_least(0));
  b.field("elmo_hidden_size", elmo_hidden_size, "rnn with elmo: the biLM's hidden_size (written from the elmo run)",
          at_least(0));
  b.field("elmo_num_layers", elmo_num_layers, "rnn with elmo: the biLM's num_layers (written from the elmo run)",
          at_least(0));
}

std::optional<BiLanguageModelOptions> ElmoKeys::bilm_options(int64_t vocab_size) const {
  if (elmo.empty()) return std::nullopt;
  if (elmo_embed_dim <= 0 || elmo_hidden_size <= 0 || elmo_num_layers <= 0)
    throw UserError("config key 'elmo_embed_dim': elmo_embed_dim, elmo_hidden_size and elmo_num_layers are the elmo "
                    "run's sizes, which a run writes when it starts; got " + std::to_string(elmo_embed_dim) + ", " +
                    std::to_string(elmo_hidden_size) + ", " + std::to_string(elmo_num_layers));
  return BiLanguageModelOptions(vocab_size)
      .embed_dim(elmo_embed_dim)
      .hidden_size(elmo_hidden_size)
      .num_layers(elmo_num_layers)
      .dropout(0.0);
}

ElmoRun read_elmo_run(const std::string& dir, Config& config, bool with_weights) {
  ElmoRun source;
  source.checkpoint = run_to_start_from(dir, "elmo", " (elmo names the folder of a bilm run)");
  const auto header = read_checkpoint_header(source.checkpoint);
  if (header.task != "bilm")
    throw UserError("config key 'elmo': " + dir + " is a run of task '" + header.task +
                    "'; ELMo features come from a bilm run (task = bilm)");
  const Config run = Config::from_ini_text(task_schema(header.task), header.config, source.checkpoint + " (config)");
  const auto bilm = bind_options<BiLmOptions>(run);
  config.set("elmo_embed_dim", std::to_string(bilm.embed_dim));
  config.set("elmo_hidden_size", std::to_string(bilm.hidden_size));
  config.set("elmo_num_layers", std::to_string(bilm.num_layers));
  // The text as the biLM read it: pieces it never saw would reach it as <unk>.
  if (config.get("normalize_words") == "auto") config.set("normalize_words", bilm.corpus.normalize_words ? "true" : "false");
  if (!with_weights) return source;
  auto loaded = load_run(source.checkpoint, torch::kCPU);
  source.step = loaded.header.state.step;
  source.spm_model = loaded.header.artifacts.at("spm.model");
  for (const auto& p : dynamic_cast<BiLmTask&>(*loaded.task).bilm().named_parameters())
    source.tensors["elmo.bilm." + p.key()] = p.value().detach();
  return source;
}

}  // namespace nlpzoo
