#include "train/tasks/registry.h"

#include <filesystem>
#include <functional>

#include "core/io.h"
#include "train/checkpoint_v1.h"
#include "train/tasks/bilm_task.h"
#include "train/tasks/electra_task.h"
#include "train/tasks/glove_task.h"
#include "train/tasks/gpt_task.h"
#include "train/tasks/language_model_task.h"
#include "train/tasks/masked_lm_task.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/translation_task.h"
#include "train/tasks/word2vec_task.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

namespace {

struct Entry {
  std::string name;
  std::function<ConfigSchema()> schema;
  std::function<std::unique_ptr<Task>()> make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"translation", translation_schema, [] { return std::make_unique<TranslationTask>(); }},
      {"language_model", language_model_schema, [] { return std::make_unique<LanguageModelTask>(); }},
      {"gpt", gpt_schema, [] { return std::make_unique<GptTask>(); }},
      {"bilm", bilm_schema, [] { return std::make_unique<BiLmTask>(); }},
      {"classification", classification_schema, [] { return std::make_unique<ClassificationTask>(); }},
      {"word2vec", word2vec_schema, [] { return std::make_unique<Word2VecTask>(); }},
      {"glove", glove_schema, [] { return std::make_unique<GloveTask>(); }},
      {"masked_lm", masked_lm_schema, [] { return std::make_unique<MaskedLmTask>(); }},
      {"electra", electra_schema, [] { return std::make_unique<ElectraTask>(); }},
  };
  return e;
}

const Entry& entry(const std::string& name) {
  std::string known;
  for (const auto& e : entries()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw UserError("unknown task '" + name + "' (known tasks: " + known + ")");
}

}  // namespace

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& e : entries()) names.push_back(e.name);
  return names;
}

ConfigSchema task_schema(const std::string& task_name) {
  auto schema = trainer_schema();
  schema.merge(task_own_schema(task_name));
  return schema;
}

ConfigSchema task_own_schema(const std::string& task_name) { return entry(task_name).schema(); }

std::unique_ptr<Task> make_task(const std::string& task_name) { return entry(task_name).make(); }

std::string run_to_start_from(const std::string& dir, const std::string& key, const std::string& expected) {
  const std::string what = "config key '" + key + "': ";
  if (!fs::exists(dir)) throw UserError(what + dir + " does not exist" + expected);
  if (!fs::is_directory(dir)) throw UserError(what + dir + " is not a folder" + expected);
  const std::string checkpoint = (fs::path(dir) / "checkpoint_last.pt").string();
  if (!fs::exists(checkpoint)) throw UserError(what + dir + " is not a run folder: it has no checkpoint_last.pt" + expected);
  if (is_checkpoint_v1(checkpoint))
    throw UserError(what + checkpoint + " is a version-1 checkpoint, read through TorchScript, which can run "
                    "code from the file; rewrite it first with: nlpzoo checkpoint upgrade " + dir);
  return checkpoint;
}

LoadedRun load_run(const std::string& checkpoint_path, const torch::Device& device, const std::string& data_dir,
                   const std::set<Split>& splits) {
  LoadedRun run;
  run.header = read_checkpoint_header(checkpoint_path);
  run.config = Config::from_ini_text(task_schema(run.header.task), run.header.config, checkpoint_path + " (config)");
  if (!data_dir.empty()) {
    auto keys = run_keys(run.config);
    keys.data_dir = data_dir;
    write_options(keys, run.config);
  }
  run.task = make_task(run.header.task);
  run.task->restore_artifacts(run.header.artifacts);
  TaskContext context{run_keys(run.config).data_dir, "", splits, /*resume=*/true};
  run.task->setup(run.config, context);
  auto model = run.task->model();
  load_checkpoint_weights(checkpoint_path, *model, nullptr, /*restore_rng=*/false);
  model->to(device);
  model->eval();
  return run;
}

}  // namespace nlpzoo
