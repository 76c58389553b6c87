#pragma once
// `nlpzoo zoo train|check`: the reference models of checkpoints/MANIFEST.json (train/zoo/) trained
// as the manifest says and checked against its expected metrics. Each model trains and is scored
// by the CLI itself, in a child process (`nlpzoo train`, `nlpzoo evaluate --json`, `nlpzoo embed
// eval`), so the numbers are the ones a user gets and the child's wall time and peak RSS are the
// model's cost; the suite is handed the way to start one (ZooSuite::cli).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "core/child_process.h"

namespace nlpzoo::zoo {

using nlohmann::json;

/// Runs the nlpzoo CLI with `args` (argv[1...]) and the environment changes `env` (as run_child),
/// capturing its standard output when `capture_stdout`.
using RunCli = std::function<ChildResult(const std::vector<std::string>& args, const std::vector<std::string>& env,
                                         bool capture_stdout)>;

struct ZooSuite {
  json manifest;              // read_manifest's
  std::string manifest_path;  // where it was read (and --update writes it)
  std::string root;           // the trained copies: ROOT/NAME
  RunCli cli;                 // the CLI's child processes
  std::ostream* log = &std::cout;  // progress and warnings ("zoo: ...")
};

/// Trains `names` (in training_order) into ROOT/NAME: each as its entry says (a copy there
/// continues with --resume), with `seed` instead of the entry's when given, early stopping off,
/// a fine-tuning model from ROOT/<init_from>; records each one's cost in ROOT/NAME/zoo_cost.json.
/// Warns of inputs whose fingerprints differ and of a copy that stopped short of its budget.
/// Throws UserError naming the model when an input is missing, a fine-tuned model's pre-trained
/// copy is neither there nor asked for, or the training fails.
void train_models(const ZooSuite& suite, const std::vector<std::string>& names, std::optional<int64_t> seed);

struct CheckOptions {
  bool update = false;                    // write the measured numbers into the manifest
  std::vector<std::string> spread_roots;  // with update: roots of copies of other seeds (at least 2)
};

struct CheckResult {
  json rows = json::array();  // check_row's, in order
  bool failed = false;        // a model regressed, is not trained, could not be checked, or its export/resume failed
};

/// Throws UserError for options that do not go together (--spread without --update, or with one root).
void check_options(const CheckOptions& options);

/// Scores each model's copy (ROOT/NAME, its last checkpoint) against the manifest's expected
/// metrics (compare_metrics), exports it (unless "export": false) and resumes a scratch copy of it
/// for one update. A model none of whose metrics could be compared (not comparable, no
/// tolerance, nothing expected) gets a "NOT CHECKED: <why>" row and fails the check, except with
/// update. Checks `options` first (check_options). With update, the suite's manifest gets the measured numbers first (update_expected,
/// the tolerances from the spread over `spread_roots`' copies, the inputs' sha256, the cost) and
/// is written back to its file. Throws UserError for bad options, a copy short of its budget
/// under update (nothing written), and unusable spread copies.
CheckResult check_models(ZooSuite& suite, const std::vector<std::string>& names, const CheckOptions& options);

/// The seed a checkpoint's run was trained with (its config's `seed`).
int64_t trained_seed(const std::string& checkpoint);

/// "" when the run's last checkpoint exports and its TorchScript twin holds the model's tensors
/// (a word-vector model: the vectors users query) unchanged; else what failed.
std::string export_problem(const std::string& run_dir, const std::string& name);

}  // namespace nlpzoo::zoo
