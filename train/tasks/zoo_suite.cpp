#include "train/tasks/zoo_suite.h"

#include <torch/script.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/io.h"
#include "infer/script_twin.h"
#include "train/checkpoint.h"
#include "train/run_lock.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"
#include "train/tasks/word_vector_source.h"
#include "train/zoo/manifest.h"
#include "train/zoo/tolerance.h"

namespace fs = std::filesystem;

namespace nlpzoo::zoo {
namespace {

std::string threads_env(const json& entry) { return "NLPZOO_THREADS=" + std::to_string(entry["threads"].get<int64_t>()); }

std::string minutes(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60) % 60);
  return text;
}

int64_t copy_step(const std::string& dir) { return read_checkpoint_header(dir + "/checkpoint_last.pt").state.step; }

// The trained copy's scores: evaluate --json's metrics, and for word vectors embed eval's analogy
// accuracy and similarity rho. {metric: {"value", "better"}}.
json measure(const ZooSuite& suite, const json& entry, const std::string& dir) {
  // The last checkpoint: the model at the budget, which a validation need not have reached.
  std::vector<std::string> args = {"evaluate", "--run-dir", dir, "--checkpoint", "last", "--json", "--device", "cpu"};
  for (const auto& a : entry.value("evaluate", json::array())) args.push_back(a.get<std::string>());
  auto r = suite.cli(args, {threads_env(entry)}, true);
  if (r.status != 0) throw UserError(dir + ": nlpzoo evaluate exited with status " + std::to_string(r.status));
  json metrics = json::parse(r.out).at("metrics");
  if (entry.contains("embed_eval")) {
    const auto out = dir + "/zoo_embed_eval.json";
    r = suite.cli({"embed", "eval", "--run-dir", dir, "--analogy", entry["embed_eval"]["analogy"].get<std::string>(),
                   "--similarity", entry["embed_eval"]["similarity"].get<std::string>(), "--json", out},
                  {threads_env(entry)}, true);
    if (r.status != 0) throw UserError(dir + ": nlpzoo embed eval exited with status " + std::to_string(r.status));
    const auto j = json::parse(read_file(out));
    metrics["analogy_accuracy"] = {{"value", j["analogy"]["total"]["accuracy"]}, {"better", "higher"}};
    metrics["similarity_spearman"] = {{"value", j["similarity"]["spearman"]}, {"better", "higher"}};
  }
  return metrics;
}

// A scratch folder of this process, removed when it goes out of scope.
struct ScratchDir {
  explicit ScratchDir(const std::string& what)
      : path(fs::temp_directory_path() / ("nlpzoo-zoo-" + what + "-" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};

// "" when a copy of the run resumes from checkpoint_last.pt and makes one more update (the
// exact-resume tests check, per family, that it is the update an uninterrupted run makes).
std::string resume_problem(const ZooSuite& suite, const std::string& dir, const std::string& name, const json& entry,
                           int64_t step) {
  ScratchDir scratch(name + "-resume");
  // Everything but the other checkpoints, the zoo's own files and a lock: the copy's config,
  // tokenizers and logs are the run's.
  for (const auto& f : fs::directory_iterator(dir)) {
    const auto file = f.path().filename().string();
    if (!f.is_regular_file() || file == "checkpoint_best.pt" || file.rfind("zoo_", 0) == 0 || file == kRunLockFile)
      continue;
    fs::copy_file(f.path(), scratch.path / file);
  }
  const auto r = suite.cli({"train", "--run-dir", scratch.path.string(), "--resume", "--max-steps",
                            std::to_string(step + 1), "--max-epochs", "1000000", "--patience", "0"},
                           {threads_env(entry)}, true);
  if (r.status != 0) return "nlpzoo train --resume exited with status " + std::to_string(r.status);
  const int64_t after = copy_step(scratch.path.string());
  if (after != step + 1) return "resumed at step " + std::to_string(step) + " but saved step " + std::to_string(after);
  return "";
}

// Each metric's values on the other seeds' copies (DIR/NAME for DIR in `roots`), which must be at
// the same step as the reference copy and have other seeds. {metric: {"seeds": [...], "values": [...],
// "budget_steps"}} with the reference copy first.
json seed_spread(const ZooSuite& suite, const json& entry, const std::string& name, const json& measured, int64_t step,
                 const std::string& dir, const std::vector<std::string>& roots) {
  json spread = json::object();
  std::vector<int64_t> seeds = {trained_seed(dir + "/checkpoint_last.pt")};
  std::vector<json> runs = {measured};
  for (const auto& root : roots) {
    const auto other = copy_dir(root, name);
    const auto last = other + "/checkpoint_last.pt";
    if (!fs::exists(last))
      throw UserError(name + ": --spread " + root + " has no trained copy (" + other + "); train it: nlpzoo zoo train " +
                      name + " --seed N --root " + root);
    if (const int64_t s = copy_step(other); s != step)
      throw UserError(name + ": " + other + " is at step " + std::to_string(s) + ", the reference copy at " +
                      std::to_string(step) + ": the spread needs the same budget");
    const int64_t seed = trained_seed(last);
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
      throw UserError(name + ": " + other + " was trained with seed " + std::to_string(seed) +
                      ", as another copy was: the spread needs other seeds (zoo train --seed N)");
    seeds.push_back(seed);
    runs.push_back(measure(suite, entry, other));
  }
  for (const auto& [metric, m] : measured.items()) {
    if (!m.contains("better") || !m["value"].is_number()) continue;
    json values = json::array();
    for (const auto& r : runs) {
      if (!r.contains(metric)) throw UserError(name + ": a copy of another seed has no metric " + metric);
      values.push_back(r[metric]["value"]);
    }
    spread[metric] = {{"seeds", seeds}, {"values", values}, {"budget_steps", step}};
  }
  return spread;
}

// Writes a copy's measured numbers into its entry `e` (update_expected), the inputs' sha256 and the cost.
void update_entry(const ZooSuite& suite, json& e, const std::string& name, const json& measured, int64_t step,
                  const std::string& dir, const std::vector<std::string>& spread_roots) {
  const auto spread =
      spread_roots.empty() ? json::object() : seed_spread(suite, e, name, measured, step, dir, spread_roots);
  // Before the fingerprints are rewritten below: a config or data file changed since they were.
  const auto inputs_changed = fingerprint_mismatch(e);
  for (const auto& note : update_expected(e, name, measured, step, spread, inputs_changed))
    *suite.log << "zoo: " << note << std::endl;
  for (const auto& file : input_files(e)) e["fingerprint"][file] = sha256_of_file(file);
  if (fs::exists(dir + "/zoo_cost.json")) e["cost"] = json::parse(read_file(dir + "/zoo_cost.json"));
  e["cost"]["libtorch"] = TORCH_VERSION;
}

}  // namespace

int64_t trained_seed(const std::string& checkpoint) {
  const auto header = read_checkpoint_header(checkpoint);
  return bind_options<TrainerOptions>(
             Config::from_ini_text(task_schema(header.task), header.config, checkpoint + " (config)"))
      .seed;
}

std::string export_problem(const std::string& dir, const std::string& name) {
  ScratchDir scratch(name + "-export");
  const auto out = (scratch.path / "model.pt").string();
  try {
    auto run = load_run(dir + "/checkpoint_last.pt", torch::kCPU);
    run.task->export_torchscript(out, run.header.config);
    const auto twin = torch::jit::load(out, torch::kCPU);
    // A word-vector export holds the vectors users query (composed from subwords, or GloVe's
    // W + W~), not the model's tensors.
    if (const auto* source = run.task->word_vector_source()) {
      if (!twin.hasattr("vectors")) return "the twin has no vectors";
      return twin.attr("vectors").toTensor().equal(source->word_vectors().vectors())
                 ? ""
                 : "the twin's vectors differ from the model's word vectors";
    }
    return twin_tensor_mismatch(*run.task->model(), twin);
  } catch (const std::exception& e) {
    return e.what();
  }
}

void train_models(const ZooSuite& suite, const std::vector<std::string>& chosen, std::optional<int64_t> seed) {
  const auto& models = suite.manifest["models"];
  auto& log = *suite.log;
  const auto names = training_order(suite.manifest, chosen);
  const auto trained = [&](const std::string& name) {
    return fs::exists(copy_dir(suite.root, name) + "/checkpoint_last.pt");
  };
  // A fine-tuning model needs its pre-trained model's copy: trained here first, or already there.
  for (const auto& name : names) {
    const auto& e = models[name];
    if (!e.contains("init_from") || trained(name)) continue;
    const auto from = e["init_from"].get<std::string>();
    if (std::find(names.begin(), names.end(), from) == names.end() && !trained(from))
      throw UserError(name + ": fine-tunes " + from + ", which has no trained copy (" + copy_dir(suite.root, from) +
                      "); train it first: nlpzoo zoo train " + from);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& name = names[i];
    const auto& e = models[name];
    for (const auto& file : input_files(e))
      if (!fs::exists(file))
        throw UserError(name + ": " + file + " is missing (make it with: " + e["data"].value("command", std::string("?")) +
                        ")");
    // The ETA of what is left of the suite, from the costs the manifest records.
    double left = 0;
    bool known = true;
    for (size_t j = i; j < names.size(); ++j) {
      const auto cost = models[names[j]].value("cost", json::object());
      if (cost.contains("wall_s")) left += cost["wall_s"].get<double>(); else known = false;
    }
    log << "zoo: [" << i + 1 << "/" << names.size() << "] " << name << ": " << e["budget_steps"].get<int64_t>()
        << " steps; suite ETA " << (known ? minutes(left) : std::string("unknown (costs not all recorded)")) << std::endl;
    if (const auto why = fingerprint_mismatch(e); !why.empty())
      log << "zoo: warning: " << name << ": " << why << ": its numbers will not be comparable" << std::endl;
    const auto dir = copy_dir(suite.root, name);
    const std::string steps = std::to_string(e["budget_steps"].get<int64_t>());
    std::vector<std::string> train_args;
    if (trained(name))
      train_args = {"train", "--run-dir", dir, "--resume", "--max-steps", steps};
    else
      train_args = {"train",       "--config",  e["config"].get<std::string>(), "--data-dir",
                    e["data"]["dir"].get<std::string>(), "--run-dir", dir, "--max-steps", steps,
                    "--seed",      std::to_string(seed ? *seed : e["seed"].get<int64_t>())};
    // The budget is the work: early stopping would end a copy where its own numbers say, so
    // that another seed or machine trains a different number of steps.
    train_args.insert(train_args.end(), {"--patience", "0"});
    // A fine-tuning run starts from its pre-trained model's copy; a resumed one has its weights.
    if (e.contains("init_from") && train_args[1] == "--config")
      train_args.insert(train_args.end(), {"--init_from", copy_dir(suite.root, e["init_from"].get<std::string>())});
    const auto r = suite.cli(train_args, {threads_env(e)}, /*capture_stdout=*/false);
    if (r.status != 0) throw UserError(name + ": nlpzoo train exited with status " + std::to_string(r.status));
    // Another budget of the config (max_epochs) can end the run first; zoo check would then
    // call every number not comparable.
    if (const int64_t step = copy_step(dir); step != e["budget_steps"].get<int64_t>())
      log << "zoo: warning: " << name << " stopped at step " << step << ", not at its budget of " << steps
          << " (its config's max_epochs or max_time ends it first): set its budget_steps to " << step << " in "
          << suite.manifest_path << std::endl;
    const json cost = {{"wall_s", std::round(r.wall_s)}, {"peak_rss_mb", r.peak_rss_kb / 1024}};
    atomic_write_text(dir + "/zoo_cost.json", cost.dump() + "\n");
    log << "zoo: " << name << ": trained in " << minutes(r.wall_s) << ", peak RSS " << r.peak_rss_kb / 1024 << " MB"
        << std::endl;
  }
}

void check_options(const CheckOptions& options) {
  if (!options.spread_roots.empty() && !options.update)
    throw UserError("--spread goes with --update (it sets the tolerances)");
  if (options.spread_roots.size() == 1)
    throw UserError("--spread needs at least 2 other roots: a spread over 2 seeds is not one");
}

CheckResult check_models(ZooSuite& suite, const std::vector<std::string>& names, const CheckOptions& options) {
  check_options(options);
  CheckResult result;
  auto& rows = result.rows;
  for (const auto& name : names) {
    auto& e = suite.manifest["models"][name];
    const auto dir = copy_dir(suite.root, name);
    if (!fs::exists(dir + "/checkpoint_last.pt")) {
      rows.push_back(check_row(name, "", nullptr, nullptr, "not trained (nlpzoo zoo train " + name + ")"));
      result.failed = true;
      continue;
    }
    const int64_t step = copy_step(dir);
    const int64_t budget = e["budget_steps"].get<int64_t>();
    const std::string off_budget =
        step == budget ? "" : "trained " + std::to_string(step) + " of " + std::to_string(budget) + " steps";
    if (options.update && !off_budget.empty())
      throw UserError(name + ": " + dir + " was " + off_budget + ": --update records copies of the manifest's budget; "
                      "nothing was written (train it to the budget: nlpzoo zoo train " + name + ")");
    const auto measured = measure(suite, e, dir);
    // An update is then checked like any copy, so its table shows the numbers now expected.
    if (options.update) update_entry(suite, e, name, measured, step, dir, options.spread_roots);
    std::string not_comparable = fingerprint_mismatch(e);
    if (not_comparable.empty()) not_comparable = off_budget;
    // A check that compared nothing passed nothing: it fails (an update has just recorded the
    // numbers it would compare: it is not required to compare them).
    const auto comparison =
        compare_metrics(name, e.value("expected", json::object()), measured, not_comparable, rows, !options.update);
    result.failed = result.failed || comparison.regressed || comparison.not_checked;
    // The artefacts beside the numbers: the export a user would make, and the resume.
    if (e.value("export", true)) {
      const auto why = export_problem(dir, name);
      rows.push_back(check_row(name, "export", nullptr, nullptr, why.empty() ? "ok" : "REGRESSED: " + why));
      result.failed = result.failed || !why.empty();
    }
    const auto why = resume_problem(suite, dir, name, e, step);
    rows.push_back(check_row(name, "resume 1 step", nullptr, nullptr, why.empty() ? "ok" : "REGRESSED: " + why));
    result.failed = result.failed || !why.empty();
  }
  if (options.update) {
    atomic_write_text(suite.manifest_path, suite.manifest.dump(2) + "\n");
    *suite.log << "zoo: wrote the measured numbers into " << suite.manifest_path << " (review with git diff)" << std::endl;
  }
  return result;
}

}  // namespace nlpzoo::zoo
