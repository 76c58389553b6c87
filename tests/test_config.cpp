// Config that composes: component schemas (the tokenizer's, rnn_schema, transformer_schema)
// declared once, merged into the tasks that build those components and checked by one reader;
// the shared key checks; and `nlpzoo train --help`, which lists the Trainer's keys once and
// then each task's own.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/registry.h"
#include "train/tasks/run_tokenizer.h"
#include "train/trainer.h"

using namespace nlpzoo;
using test::run_cli;
using test::user_error_of;

namespace {

// Occurrences of `needle` in `text`.
size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The resolved defaults of `schema` with `overrides` ("--key value ...").
Config resolved(const ConfigSchema& schema, const std::vector<std::string>& overrides = {}) {
  return Config::resolve(schema, "", overrides);
}

}  // namespace

TEST(ConfigSchema, SetDefaultChangesADeclaredKeyAndMergeRefusesConflicts) {
  ConfigSchema s = rnn_schema();
  s.set_default("num_layers", "2").set_default("hidden_size", "64", "state size per direction");
  EXPECT_EQ(s.find("num_layers")->default_value, "2");
  EXPECT_EQ(s.find("num_layers")->help, rnn_schema().find("num_layers")->help);  // empty help keeps it
  EXPECT_EQ(s.find("hidden_size")->help, "state size per direction");
  EXPECT_THROW(s.set_default("no_such_key", "1"), std::logic_error);
  // The same key with the same default merges into one; with another default it is a bug.
  ConfigSchema both = rnn_schema();
  both.merge(transformer_schema());
  EXPECT_EQ(both.keys().size(), rnn_schema().keys().size() + transformer_schema().keys().size() - 1);  // dropout once
  EXPECT_THROW(s.merge(rnn_schema()), std::logic_error);
}

// Each task that builds a component declares its keys through the component's schema: the
// same help (unless the task says what the key means for it) and the same choices.
TEST(ConfigSchema, TasksComposeTheComponentSchemas) {
  const std::map<std::string, std::vector<ConfigSchema>> uses = {
      {"translation", {tokenizer_schema(), rnn_schema(), transformer_schema()}},
      {"language_model", {tokenizer_schema(), rnn_schema()}},
      {"classification", {tokenizer_schema(), rnn_schema(), transformer_schema()}}};
  for (const auto& [task, components] : uses) {
    const auto own = task_own_schema(task);
    for (const auto& component : components)
      for (const auto& k : component.keys()) {
        const auto* declared = own.find(k.key);
        ASSERT_NE(declared, nullptr) << task << ": " << k.key;
        EXPECT_EQ(declared->choices, k.choices) << task << ": " << k.key;
      }
  }
  // Defaults the tasks chose for themselves.
  const auto lm = resolved(task_schema("language_model"));
  EXPECT_EQ(lm.get("num_layers"), "2");
  EXPECT_EQ(lm.get("embed_dim"), "512");
  const auto translation = resolved(task_schema("translation"));
  EXPECT_EQ(translation.get("cell"), "gru");
  EXPECT_EQ(translation.get("dropout"), "0.2");
  EXPECT_EQ(translation.get("d_model"), "256");
  EXPECT_EQ(resolved(task_schema("classification")).get("dropout"), "0.3");
}

TEST(ConfigSchema, TaskOwnSchemaHoldsNoTrainerKey) {
  const auto trainer = trainer_schema();
  for (const auto& task : task_names()) {
    const auto own = task_own_schema(task);
    for (const auto& k : trainer.keys()) EXPECT_EQ(own.find(k.key), nullptr) << task << ": " << k.key;
    EXPECT_EQ(task_schema(task).keys().size(), trainer.keys().size() + own.keys().size()) << task;
  }
  EXPECT_NE(user_error_of([] { task_own_schema("bert"); }).find("known tasks: translation"), std::string::npos);
}

// One reader per component, so every task rejects a bad value the same way, naming the key.
TEST(ComponentConfig, ReadersCheckEveryKeyOnce) {
  const auto schema = task_schema("translation");
  const auto t = transformer_config(resolved(schema, {"--positions", "relative", "--relative_k", "3"}));
  EXPECT_EQ(t.layer().d_model(), 256);
  EXPECT_EQ(t.layer().num_heads(), 4);
  EXPECT_EQ(t.layer().relative_k(), 3);
  EXPECT_EQ(transformer_config(resolved(schema, {"--relative_k", "3"})).layer().relative_k(), 0);  // sinusoidal
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--d_model", "0"}, "config key 'd_model': must be positive, got 0"},
      {{"--num_heads", "3"}, "config key 'num_heads': must divide d_model (256), got 3"},
      {{"--ffn_dim", "-1"}, "config key 'ffn_dim': must be positive, got -1"},
      {{"--dropout", "1"}, "config key 'dropout': must be in [0, 1), got 1"},
      // Not checked before the component reader: a rate of 1.5 reached the model.
      {{"--attention_dropout", "1.5"}, "config key 'attention_dropout': must be in [0, 1), got 1.5"}};
  for (const auto& [overrides, message] : bad)
    EXPECT_EQ(user_error_of([&] { transformer_config(resolved(schema, overrides)); }), message);

  const auto r = rnn_config(resolved(task_schema("classification"), {"--cell", "gru"}));
  EXPECT_EQ(r.cell, CellType::kGru);
  EXPECT_EQ(r.hidden_size, 128);
  EXPECT_DOUBLE_EQ(r.dropout, 0.3);
  for (const auto& task : {"translation", "language_model", "classification"})
    EXPECT_EQ(user_error_of([&] { rnn_config(resolved(task_schema(task), {"--num_layers", "0"})); }),
              "config key 'num_layers': must be positive, got 0")
        << task;
}

TEST(LoadedSplit, MissingSplitIsAUserErrorNamingIt) {
  const std::map<Split, int> data = {{Split::kTrain, 7}};
  EXPECT_EQ(loaded_split(data, Split::kTrain), 7);
  EXPECT_EQ(user_error_of([&] { loaded_split(data, Split::kTest); }),
            "the test split was not loaded (no --data-dir?)");
}

// `train --help`: the Trainer's keys once, then every task's own keys (before: the Trainer's
// keys again under each of the five tasks, with defaults such as task = translation).
TEST(TrainHelp, ListsTheTrainerKeysOnceThenEachTasksOwn) {
  const auto r = run_cli("train --help");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Config keys of the Trainer"), 1u) << r.out;
  const auto trainer = trainer_schema();
  for (const auto& k : trainer.keys()) EXPECT_EQ(count_of(r.out, "  --" + k.key + " (="), 1u) << k.key;
  for (const auto& task : task_names()) {
    EXPECT_EQ(count_of(r.out, "Config keys of task '" + task + "'"), 1u) << task;
    const auto own = task_own_schema(task);
    EXPECT_GT(own.keys().size(), 3u) << task;
  }
  // The first task section comes after the Trainer's, and no task section repeats its keys.
  const auto tasks_start = r.out.find("Config keys of task '");
  ASSERT_NE(tasks_start, std::string::npos);
  EXPECT_LT(r.out.find("Config keys of the Trainer"), tasks_start);
  for (const auto& k : trainer.keys())
    EXPECT_EQ(r.out.find("  --" + k.key + " (=", tasks_start), std::string::npos) << k.key;
}

TEST(TrainHelp, TaskFlagShowsOneTask) {
  const auto r = run_cli("train --help --task glove");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Config keys of task '"), 1u) << r.out;
  EXPECT_NE(r.out.find("Config keys of task 'glove'"), std::string::npos);
  EXPECT_NE(r.out.find("  --x_max (=100)"), std::string::npos);
  EXPECT_NE(r.out.find("  --optimizer (=adam)"), std::string::npos);  // the Trainer's keys still apply
  EXPECT_EQ(r.out.find("--src_lang"), std::string::npos);
  // A config file's task, likewise.
  const auto c = run_cli("train --help --config " + test::shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/glove.ini"));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(count_of(c.out, "Config keys of task '"), 1u) << c.out;
  EXPECT_NE(c.out.find("Config keys of task 'glove'"), std::string::npos);
}

TEST(TrainHelp, UnknownTaskIsAClearError) {
  const auto r = run_cli("train --help --task bert");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("unknown task 'bert'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("known tasks: translation, language_model, gpt, bilm, classification, word2vec, glove"), std::string::npos)
      << r.err;
}

// Outside --help, --task cannot disagree with the config file, whose task key chooses the task.
TEST(TrainHelp, TaskFlagThatContradictsTheConfigIsAnError) {
  const auto dir = test::fresh_temp_dir("task_flag");
  const auto r = run_cli("train --config " + test::shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/glove.ini") +
                         " --run-dir " + test::shell_quote((dir / "run").string()) + " --task translation");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--task translation"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trains task 'glove'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "run"));
  std::filesystem::remove_all(dir);
}

// Boost keeps the last of two values without a word; an INI file that gives a key twice is an
// edit gone wrong and must name both lines. The command line may repeat a flag (the last wins).
TEST(Config, AKeyGivenTwiceInAFileNamesBothLines) {
  const auto dir = test::fresh_temp_dir("config_twice");
  const auto ini = (dir / "c.ini").string();
  atomic_write_text(ini, "task = translation\nlr = 0.1 # first\n\n  lr=0.2\n");
  const auto e = user_error_of([&] { Config::resolve(trainer_schema(), ini, {}); });
  EXPECT_NE(e.find(ini + ":4: config key 'lr' is given twice (also on line 2)"), std::string::npos) << e;
  EXPECT_NE(user_error_of([&] { Config::from_ini_text(trainer_schema(), "seed = 1\nseed = 2\n", "saved"); })
                .find("saved:2: config key 'seed' is given twice"),
            std::string::npos);
  atomic_write_text(ini, "task = translation\nlr = 0.1\n# lr = 0.3\n");
  EXPECT_EQ(Config::resolve(trainer_schema(), ini, {"--lr", "0.4", "--lr", "0.5"}).get("lr"), "0.5");
  std::filesystem::remove_all(dir);
}

// A sectioned INI file (as other tools write them) is refused at its header's line, before the
// task is looked up. (Before, "[model]" made every key "model.<key>", and the error was
// "missing the 'task' key" or "unknown config key 'model.cell'".)
TEST(Config, ASectionHeaderIsRefusedAtItsLine) {
  const auto dir = test::fresh_temp_dir("config_section");
  const auto ini = (dir / "c.ini").string();
  atomic_write_text(ini, "# sst-2\n  [model]  # the model's keys\ntask = classification\n");
  for (const auto& e : {user_error_of([&] { read_task_name(ini); }),
                        user_error_of([&] { Config::resolve(trainer_schema(), ini, {}); })})
    EXPECT_NE(e.find(ini + ":2: '[model]': nlpzoo configs have no sections"), std::string::npos) << e;
  // A '[' inside a value or a comment is no header.
  atomic_write_text(ini, "task = translation # [not a section]\n");
  EXPECT_EQ(read_task_name(ini), "translation");
  std::filesystem::remove_all(dir);
}

// The Trainer's values are checked before a task's slow setup; each bad value names its key.
// (Before, a negative lr failed after tokenizer training with LibTorch's "Invalid learning rate",
// and NaN, inf, update_freq 0 or valid_interval -1 were accepted.)
TEST(Config, TrainerValuesAreCheckedAndNameTheKey) {
  EXPECT_EQ(user_error_of([] { check_trainer_config(resolved(trainer_schema())); }), "(no UserError thrown)");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"lr", "-1"},          {"lr", "nan"},           {"lr", "inf"},           {"clip_norm", "inf"},
      {"clip_norm", "-1"},   {"update_freq", "0"},    {"valid_interval", "-1"}, {"log_interval", "0"},
      {"max_time", "-2"},    {"max_steps", "-1"},     {"adam_beta2", "1"},     {"adam_eps", "0"},
      {"weight_decay", "nan"}, {"warmup_steps", "-5"}, {"plateau_factor", "0"}, {"patience", "-1"},
      {"log_seconds", "-1"}, {"warmup_fraction", "1.5"}, {"warmup_time", "nan"}};
  for (const auto& [key, value] : bad) {
    const auto e = user_error_of([&] { check_trainer_config(resolved(trainer_schema(), {"--" + key, value})); });
    EXPECT_NE(e.find("config key '" + key + "'"), std::string::npos) << key << " = " << value << ": " << e;
  }
  EXPECT_EQ(check_trainer_config(resolved(trainer_schema(), {"--lr", "1e-3"})).schedule.lr, 1e-3);
}

// A split the task did not load is a clear error, and asking for it leaves the task as it was
// (TranslationTask looked it up with operator[], which inserted an empty split).
TEST(TaskSplits, ASplitNotLoadedIsAnErrorNotAnEmptySplit) {
  const auto dir = test::fresh_temp_dir("task_splits");
  test::write_numbers_corpus(dir / "data");
  Config config = resolved(task_schema("translation"),
                           {"--src_vocab_size", "40", "--tgt_vocab_size", "40", "--embed_dim", "8", "--hidden_size", "8",
                            "--attention_dim", "8"});
  auto task = make_task("translation");
  task->setup(config, {(dir / "data").string(), (dir / "run").string(), {Split::kTrain, Split::kValid}, false});
  EXPECT_GT(task->num_batches(Split::kValid, 0), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto e = user_error_of([&] { task->num_batches(Split::kTest, 0); });
    EXPECT_NE(e.find("the test split was not loaded"), std::string::npos) << e;
  }
  std::filesystem::remove_all(dir);
}
