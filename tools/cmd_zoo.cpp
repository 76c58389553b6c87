// nlpzoo zoo list|train|check: the flags and tables of the reference models' commands. The
// manifest and its rules live in train/zoo/, the training and checking in
// train/tasks/zoo_suite.h, which runs this executable's own commands as child processes.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/child_process.h"
#include "core/io.h"
#include "tools/command.h"
#include "tools/options.h"
#include "train/checkpoint.h"
#include "train/tasks/zoo_suite.h"
#include "train/zoo/manifest.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace nlpzoo::cli {
namespace {

void add_zoo_flags(po::options_description& desc) {
  desc.add_options()
      ("names", po::value<std::vector<std::string>>()->multitoken(), "reference models (default: all), positional")
      ("manifest", po::value<std::string>()->default_value("checkpoints/MANIFEST.json"), "the manifest")
      ("root", po::value<std::string>()->default_value("checkpoints"), "where the trained copies live: ROOT/NAME");
}

// The names given (checked against the manifest), or every model of it.
std::vector<std::string> chosen(const po::variables_map& vm, const json& manifest, const std::string& path) {
  return zoo::chosen_models(manifest, vm.count("names") ? vm["names"].as<std::vector<std::string>>() : std::vector<std::string>(),
                            path);
}

zoo::ZooSuite suite_from_flags(const po::variables_map& vm) {
  zoo::ZooSuite suite;
  suite.manifest_path = vm["manifest"].as<std::string>();
  suite.manifest = zoo::read_manifest(suite.manifest_path);
  suite.root = vm["root"].as<std::string>();
  suite.cli = [](const std::vector<std::string>& args, const std::vector<std::string>& env, bool capture_stdout) {
    return run_self(args, env, capture_stdout);
  };
  return suite;
}

int run_list(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_zoo_flags(desc);
  auto vm = parse_args(args, desc, "zoo list [NAME ...] [--manifest FILE] [--root DIR]", {"names"});
  if (!vm) return 0;
  const auto path = (*vm)["manifest"].as<std::string>();
  const auto manifest = zoo::read_manifest(path);
  std::cout << std::left << std::setw(28) << "model" << std::setw(9) << "steps" << std::setw(22) << "trained copy"
            << "expected metrics\n";
  for (const auto& name : chosen(*vm, manifest, path)) {
    const auto& e = manifest["models"][name];
    const auto last = zoo::copy_dir((*vm)["root"].as<std::string>(), name) + "/checkpoint_last.pt";
    std::string copy = "none";
    if (fs::exists(last)) copy = "step " + std::to_string(read_checkpoint_header(last).state.step);
    std::string expected;
    // A named copy: items() of the temporary value() returns would dangle inside the loop.
    const json expected_metrics = e.value("expected", json::object());
    for (const auto& [metric, x] : expected_metrics.items()) {
      std::ostringstream s;
      s << metric << " " << x.value("value", 0.0);
      if (x.contains("tolerance") && !x["tolerance"].is_null()) s << " ± " << x["tolerance"].get<double>();
      expected += (expected.empty() ? "" : ", ") + s.str();
    }
    std::cout << std::setw(28) << name << std::setw(9) << e["budget_steps"].get<int64_t>() << std::setw(22) << copy
              << (expected.empty() ? "not measured yet" : expected) << "\n";
  }
  return 0;
}

int run_train(const std::vector<std::string>& args) {
  po::options_description desc(
      "Trains each named reference model (default: all) as checkpoints/MANIFEST.json says: its config, data\n"
      "folder, budget in steps, seed and threads, into ROOT/NAME (a copy there continues with --resume).\n"
      "A data file or config whose sha256 differs from the manifest's is reported: its numbers will not be\n"
      "comparable. A model with \"init_from\" (fine-tuning) starts from that model's copy, ROOT/<init_from>,\n"
      "which is trained first when it is asked for too. Options");
  add_zoo_flags(desc);
  desc.add_options()
      ("seed", po::value<int64_t>(), "train with this seed instead of each entry's: the other seeds of the same budget, "
                                     "into another --root, whose spread zoo check --update --spread turns into tolerances");
  auto vm = parse_args(args, desc, "zoo train [NAME ...] [--seed N] [--manifest FILE] [--root DIR]", {"names"});
  if (!vm) return 0;
  const auto suite = suite_from_flags(*vm);
  const std::optional<int64_t> seed = vm->count("seed") ? std::optional<int64_t>((*vm)["seed"].as<int64_t>()) : std::nullopt;
  zoo::train_models(suite, chosen(*vm, suite.manifest, suite.manifest_path), seed);
  return 0;
}

int run_check(const std::vector<std::string>& args) {
  po::options_description desc(
      "Scores each named reference model's trained copy (ROOT/NAME, its last checkpoint) and compares it with the manifest's\n"
      "expected metrics: ok within the tolerance, REGRESSED when worse by more, better when better by more\n"
      "(consider --update). It also exports each copy (its TorchScript twin must hold the model's tensors\n"
      "unchanged; an entry with \"export\": false has no export) and resumes a scratch copy of it for one update.\n"
      "Exit status 1 when a model regressed, its export or resume failed, it has no trained copy, or none of its\n"
      "metrics could be compared (NOT CHECKED: not comparable, or no expected value with a tolerance). Options");
  add_zoo_flags(desc);
  desc.add_options()
      ("json", po::bool_switch(), "print the rows as one JSON array instead of the table")
      ("update", po::bool_switch(), "write the measured numbers (and the inputs' sha256 and the cost) into the manifest, "
                                    "keeping each metric's tolerance: a deliberate change, reviewed in git; the table "
                                    "then shows the new expected values. Only for a copy at the manifest's budget_steps")
      ("spread", po::value<std::vector<std::string>>()->multitoken(),
       "with --update: DIR... (at least 2), the roots of copies trained to the same budget with other seeds "
       "(nlpzoo zoo train NAME --seed N --root DIR); each metric's tolerance becomes 3 sample standard deviations "
       "of its values over those copies and ROOT's (at least 0.1% of the value), and the values are kept beside it; "
       "without --spread a metric keeps its tolerance unless that came from seeds of another budget_steps");
  auto vm = parse_args(args, desc, "zoo check [NAME ...] [--json] [--update [--spread DIR DIR ...]] [--manifest FILE] [--root DIR]",
                       {"names"});
  if (!vm) return 0;
  auto suite = suite_from_flags(*vm);
  zoo::CheckOptions options;
  options.update = (*vm)["update"].as<bool>();
  if (vm->count("spread")) options.spread_roots = (*vm)["spread"].as<std::vector<std::string>>();
  zoo::check_options(options);
  const auto result = zoo::check_models(suite, chosen(*vm, suite.manifest, suite.manifest_path), options);
  const auto& rows = result.rows;
  if ((*vm)["json"].as<bool>()) {
    std::cout << rows.dump(1) << std::endl;
  } else {
    std::cout << std::left << std::setw(28) << "model" << std::setw(22) << "metric" << std::setw(24) << "expected ± tol"
              << std::setw(14) << "measured" << "verdict\n";
    for (const auto& r : rows) {
      std::ostringstream x, m;
      if (r["expected"].is_object()) {
        x << r["expected"].value("value", 0.0);
        if (r["expected"].contains("tolerance") && !r["expected"]["tolerance"].is_null())
          x << " ± " << r["expected"]["tolerance"].get<double>();
      } else {
        x << "-";
      }
      if (r["measured"].is_number()) m << r["measured"].get<double>(); else m << "-";
      std::cout << std::setw(28) << r["model"].get<std::string>() << std::setw(22) << r["metric"].get<std::string>()
                << std::setw(24) << x.str() << std::setw(14) << m.str() << r["verdict"].get<std::string>() << "\n";
    }
  }
  return result.failed ? 1 : 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(zoo_list, "zoo list", "the reference models: budgets, expected metrics, trained copies", run_list);
NLPZOO_REGISTER_COMMAND(zoo_train, "zoo train", "train the reference models as checkpoints/MANIFEST.json says", run_train);
NLPZOO_REGISTER_COMMAND(zoo_check, "zoo check",
                        "score the trained reference models against the manifest; exit 1 on a regression", run_check);

}  // namespace nlpzoo::cli
