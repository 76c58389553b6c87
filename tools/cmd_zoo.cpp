// nlpzoo zoo list|train|check: the reference models of checkpoints/MANIFEST.json (one per config
// in configs/), trained as the manifest says and checked against its expected metrics. Each
// model trains and is scored in a child process of this executable (`nlpzoo train`,
// `nlpzoo evaluate --json`, `nlpzoo embed eval`), so the numbers are the ones a user gets,
// and the child's wall time and peak RSS are the model's cost.
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "core/config.h"
#include "core/io.h"
#include "infer/script_twin.h"
#include "tools/child_process.h"
#include "tools/command.h"
#include "tools/options.h"
#include "train/checkpoint.h"
#include "train/tasks/registry.h"
#include "train/tasks/word_vector_source.h"

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

json read_manifest(const std::string& path) {
  require_file(path, "the reference models' manifest");
  json m;
  try {
    m = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw UserError(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!m.contains("models") || !m["models"].is_object() || m["models"].empty())
    throw UserError(path + ": no \"models\" object");
  for (const auto& [name, e] : m["models"].items()) {
    for (const char* key : {"config", "data", "budget_steps", "seed", "threads"})
      if (!e.contains(key)) throw UserError(path + ": model '" + name + "' has no \"" + key + "\"");
    if (e.contains("init_from")) {
      const auto& from = e["init_from"];
      if (!from.is_string() || !m["models"].contains(from.get<std::string>()) || from.get<std::string>() == name)
        throw UserError(path + ": model '" + name + "': \"init_from\" must name another model of the manifest, got " +
                        from.dump());
      if (m["models"][from.get<std::string>()].contains("init_from"))
        throw UserError(path + ": model '" + name + "': its init_from '" + from.get<std::string>() +
                        "' is itself fine-tuned; init_from names a pre-trained model");
    }
  }
  return m;
}

// The models in training order: each one's init_from model (when it is asked for too) first,
// the rest in the order given.
std::vector<std::string> training_order(const json& manifest, const std::vector<std::string>& names) {
  std::vector<std::string> order;
  const auto place = [&](const std::string& n) {
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  };
  for (const auto& n : names) {
    const auto& e = manifest["models"][n];
    if (e.contains("init_from")) {
      const auto from = e["init_from"].get<std::string>();
      if (std::find(names.begin(), names.end(), from) != names.end()) place(from);
    }
    place(n);
  }
  return order;
}

// The names asked for, each checked against the manifest; all of them when none is given.
std::vector<std::string> chosen(const po::variables_map& vm, const json& manifest, const std::string& path) {
  std::vector<std::string> names;
  if (vm.count("names")) {
    names = vm["names"].as<std::vector<std::string>>();
    for (const auto& n : names)
      if (!manifest["models"].contains(n)) {
        std::string known;
        for (const auto& [k, v] : manifest["models"].items()) known += (known.empty() ? "" : ", ") + k;
        throw UserError("'" + n + "' is not a model of " + path + " (" + known + ")");
      }
  } else {
    for (const auto& [k, v] : manifest["models"].items()) names.push_back(k);
  }
  return names;
}

std::string sha256(const std::string& path) {
  const auto r = run_child("sha256sum", {"--", path});
  if (r.status != 0 || r.out.size() < 64) throw UserError(path + ": cannot compute its sha256 (sha256sum failed)");
  return r.out.substr(0, 64);
}

// The files an entry's numbers depend on: its config, the presets it starts from (`base = ...`)
// and its data files.
std::vector<std::string> input_files(const json& entry) {
  const auto config = entry["config"].get<std::string>();
  std::vector<std::string> files = {config};
  if (fs::is_regular_file(config)) {
    const auto chain = preset_chain(config);  // the deepest base first, the config last
    for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) files.push_back(it->path);
  }
  const auto dir = entry["data"].value("dir", std::string());
  for (const auto& f : entry["data"].value("files", json::array())) files.push_back(dir + "/" + f.get<std::string>());
  return files;
}

// "" when every recorded fingerprint matches the files here; else what differs. A fingerprint
// recorded as null (not measured yet) is not compared.
std::string fingerprint_mismatch(const json& entry) {
  const auto recorded = entry.value("fingerprint", json::object());
  for (const auto& file : input_files(entry)) {
    if (!recorded.contains(file) || recorded[file].is_null()) continue;
    if (!fs::exists(file)) return file + " is missing";
    if (sha256(file) != recorded[file].get<std::string>()) return file + " differs from the manifest's";
  }
  return "";
}

std::string run_dir(const po::variables_map& vm, const std::string& name) {
  return (fs::path(vm["root"].as<std::string>()) / name).string();
}

std::string threads_env(const json& entry) { return "NLPZOO_THREADS=" + std::to_string(entry["threads"].get<int64_t>()); }

std::string minutes(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60) % 60);
  return text;
}

int run_list(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_zoo_flags(desc);
  auto vm = parse_args(args, desc, "zoo list [NAME ...] [--manifest FILE] [--root DIR]", {"names"});
  if (!vm) return 0;
  const auto path = (*vm)["manifest"].as<std::string>();
  const auto manifest = read_manifest(path);
  std::cout << std::left << std::setw(28) << "model" << std::setw(9) << "steps" << std::setw(22) << "trained copy"
            << "expected metrics\n";
  for (const auto& name : chosen(*vm, manifest, path)) {
    const auto& e = manifest["models"][name];
    const auto last = run_dir(*vm, name) + "/checkpoint_last.pt";
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
  const auto path = (*vm)["manifest"].as<std::string>();
  const auto manifest = read_manifest(path);
  const auto names = training_order(manifest, chosen(*vm, manifest, path));
  // A fine-tuning model needs its pre-trained model's copy: trained here first, or already there.
  for (const auto& name : names) {
    const auto& e = manifest["models"][name];
    if (!e.contains("init_from") || fs::exists(run_dir(*vm, name) + "/checkpoint_last.pt")) continue;
    const auto from = e["init_from"].get<std::string>();
    if (std::find(names.begin(), names.end(), from) == names.end() &&
        !fs::exists(run_dir(*vm, from) + "/checkpoint_last.pt"))
      throw UserError(name + ": fine-tunes " + from + ", which has no trained copy (" + run_dir(*vm, from) +
                      "); train it first: nlpzoo zoo train " + from);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& name = names[i];
    const auto& e = manifest["models"][name];
    for (const auto& file : input_files(e))
      if (!fs::exists(file))
        throw UserError(name + ": " + file + " is missing (make it with: " + e["data"].value("command", std::string("?")) +
                        ")");
    // The ETA of what is left of the suite, from the costs the manifest records.
    double left = 0;
    bool known = true;
    for (size_t j = i; j < names.size(); ++j) {
      const auto cost = manifest["models"][names[j]].value("cost", json::object());
      if (cost.contains("wall_s")) left += cost["wall_s"].get<double>(); else known = false;
    }
    std::cout << "zoo: [" << i + 1 << "/" << names.size() << "] " << name << ": " << e["budget_steps"].get<int64_t>()
              << " steps; suite ETA " << (known ? minutes(left) : std::string("unknown (costs not all recorded)"))
              << std::endl;
    if (const auto why = fingerprint_mismatch(e); !why.empty())
      std::cout << "zoo: warning: " << name << ": " << why << ": its numbers will not be comparable" << std::endl;
    const auto dir = run_dir(*vm, name);
    const std::string steps = std::to_string(e["budget_steps"].get<int64_t>());
    std::vector<std::string> train_args;
    if (fs::exists(dir + "/checkpoint_last.pt"))
      train_args = {"train", "--run-dir", dir, "--resume", "--max-steps", steps};
    else
      train_args = {"train",       "--config",  e["config"].get<std::string>(), "--data-dir",
                    e["data"]["dir"].get<std::string>(), "--run-dir", dir, "--max-steps", steps,
                    "--seed",      std::to_string(vm->count("seed") ? (*vm)["seed"].as<int64_t>() : e["seed"].get<int64_t>())};
    // The budget is the work: early stopping would end a copy where its own numbers say, so
    // that another seed or machine trains a different number of steps.
    train_args.insert(train_args.end(), {"--patience", "0"});
    // A fine-tuning run starts from its pre-trained model's copy; a resumed one has its weights.
    if (e.contains("init_from") && train_args[1] == "--config")
      train_args.insert(train_args.end(), {"--init_from", run_dir(*vm, e["init_from"].get<std::string>())});
    const auto r = run_self(train_args, {threads_env(e)}, /*capture_stdout=*/false);
    if (r.status != 0) throw UserError(name + ": nlpzoo train exited with status " + std::to_string(r.status));
    // Another budget of the config (max_epochs) can end the run first; zoo check would then
    // call every number not comparable.
    if (const int64_t step = read_checkpoint_header(dir + "/checkpoint_last.pt").state.step;
        step != e["budget_steps"].get<int64_t>())
      std::cout << "zoo: warning: " << name << " stopped at step " << step << ", not at its budget of " << steps
                << " (its config's max_epochs or max_time ends it first): set its budget_steps to " << step << " in " << path
                << std::endl;
    const json cost = {{"wall_s", std::round(r.wall_s)}, {"peak_rss_mb", r.peak_rss_kb / 1024}};
    atomic_write_text(dir + "/zoo_cost.json", cost.dump() + "\n");
    std::cout << "zoo: " << name << ": trained in " << minutes(r.wall_s) << ", peak RSS " << r.peak_rss_kb / 1024
              << " MB" << std::endl;
  }
  return 0;
}

// The trained copy's scores: evaluate --json's metrics, and for word vectors embed eval's analogy
// accuracy and similarity rho. {metric: {"value", "better"}}.
json measure(const json& entry, const std::string& dir) {
  // The last checkpoint: the model at the budget, which a validation need not have reached.
  std::vector<std::string> args = {"evaluate", "--run-dir", dir, "--checkpoint", "last", "--json", "--device", "cpu"};
  for (const auto& a : entry.value("evaluate", json::array())) args.push_back(a.get<std::string>());
  auto r = run_self(args, {threads_env(entry)});
  if (r.status != 0) throw UserError(dir + ": nlpzoo evaluate exited with status " + std::to_string(r.status));
  json metrics = json::parse(r.out).at("metrics");
  if (entry.contains("embed_eval")) {
    const auto out = dir + "/zoo_embed_eval.json";
    r = run_self({"embed", "eval", "--run-dir", dir, "--analogy", entry["embed_eval"]["analogy"].get<std::string>(),
                  "--similarity", entry["embed_eval"]["similarity"].get<std::string>(), "--json", out},
                 {threads_env(entry)});
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

// "" when the last checkpoint exports and its twin holds the model's tensors unchanged (the
// export tests check, per family, that equal tensors give equal outputs); else what failed.
std::string export_problem(const std::string& dir, const std::string& name) {
  ScratchDir scratch(name + "-export");
  const auto out = (scratch.path / "model.pt").string();
  try {
    auto run = load_run(checkpoint_in(dir, "last"), torch::kCPU);
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

// "" when a copy of the run resumes from checkpoint_last.pt and makes one more update (the
// exact-resume tests check, per family, that it is the update an uninterrupted run makes).
std::string resume_problem(const std::string& dir, const std::string& name, const json& entry, int64_t step) {
  ScratchDir scratch(name + "-resume");
  // Everything but the other checkpoints and the zoo's own files: the copy's config,
  // tokenizers and logs are the run's.
  for (const auto& f : fs::directory_iterator(dir)) {
    const auto file = f.path().filename().string();
    if (!f.is_regular_file() || file == "checkpoint_best.pt" || file.rfind("zoo_", 0) == 0) continue;
    fs::copy_file(f.path(), scratch.path / file);
  }
  const auto r = run_self({"train", "--run-dir", scratch.path.string(), "--resume", "--max-steps",
                           std::to_string(step + 1), "--max-epochs", "1000000", "--patience", "0"},
                          {threads_env(entry)});
  if (r.status != 0) return "nlpzoo train --resume exited with status " + std::to_string(r.status);
  const int64_t after = read_checkpoint_header((scratch.path / "checkpoint_last.pt").string()).state.step;
  if (after != step + 1) return "resumed at step " + std::to_string(step) + " but saved step " + std::to_string(after);
  return "";
}

// The seed a run folder's copy was trained with (its config's `seed`).
int64_t trained_seed(const std::string& checkpoint) {
  const auto header = read_checkpoint_header(checkpoint);
  return Config::from_ini_text(task_schema(header.task), header.config, checkpoint + " (config)").get_int("seed");
}

// A metric's tolerance from its values over seeds of one budget: three sample standard
// deviations (about 99.7% of the seed-to-seed spread, if it is normal), and at least 0.1% of
// the reference value, so that a metric which came out the same for every seed still allows
// the last-digit differences of another BLAS or thread count. Rounded up to 3 significant digits.
double spread_tolerance(const std::vector<double>& values, double reference) {
  double mean = 0, ss = 0;
  for (double v : values) mean += v / values.size();
  for (double v : values) ss += (v - mean) * (v - mean);
  const double tolerance = std::max({3 * std::sqrt(ss / (values.size() - 1)), 1e-3 * std::abs(reference), 1e-6});
  const double unit = std::pow(10.0, std::floor(std::log10(tolerance)) - 2);
  // Through the decimal text, so that the manifest says 0.00971 and not 0.009710000000000002.
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", std::ceil(tolerance / unit) * unit);
  return std::stod(text);
}

// Each metric's values on the other seeds' copies (DIR/NAME for DIR in `roots`), which must be at
// the same step as the reference copy and have other seeds. {metric: {"seeds": [...], "values": [...]}}
// with the reference copy first.
json seed_spread(const json& entry, const std::string& name, const json& measured, int64_t step, const std::string& dir,
                 const std::vector<std::string>& roots) {
  json spread = json::object();
  std::vector<int64_t> seeds = {trained_seed(dir + "/checkpoint_last.pt")};
  std::vector<json> runs = {measured};
  for (const auto& root : roots) {
    const auto other = (fs::path(root) / name).string();
    const auto last = other + "/checkpoint_last.pt";
    if (!fs::exists(last))
      throw UserError(name + ": --spread " + root + " has no trained copy (" + other + "); train it: nlpzoo zoo train " +
                      name + " --seed N --root " + root);
    if (const int64_t s = read_checkpoint_header(last).state.step; s != step)
      throw UserError(name + ": " + other + " is at step " + std::to_string(s) + ", the reference copy at " +
                      std::to_string(step) + ": the spread needs the same budget");
    const int64_t seed = trained_seed(last);
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
      throw UserError(name + ": " + other + " was trained with seed " + std::to_string(seed) +
                      ", as another copy was: the spread needs other seeds (zoo train --seed N)");
    seeds.push_back(seed);
    runs.push_back(measure(entry, other));
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

// Writes a copy's measured numbers into its entry `e`: each metric's value, its tolerance (from
// the seeds' spread when `spread_roots` names other copies, else the old one unless seeds of
// another budget gave it), the inputs' sha256 and the cost.
void update_entry(json& e, const std::string& name, const json& measured, int64_t step, const std::string& dir,
                  const std::vector<std::string>& spread_roots) {
  const auto expected = e.value("expected", json::object());
  const auto spread = spread_roots.empty() ? json::object() : seed_spread(e, name, measured, step, dir, spread_roots);
  // Before the fingerprints are rewritten below: a config or data file changed since they were.
  const auto inputs_changed = fingerprint_mismatch(e);
  for (const auto& [metric, m] : measured.items()) {
    if (!m.contains("better")) continue;  // counts (tokens, sentences) are not metrics
    json x = {{"value", m["value"]}, {"tolerance", nullptr}};
    if (spread.contains(metric)) {
      std::vector<double> values;
      for (const auto& v : spread[metric]["values"]) values.push_back(v.get<double>());
      x["tolerance"] = spread_tolerance(values, m["value"].get<double>());
      x["spread"] = spread[metric];
    } else if (expected.contains(metric) && expected[metric].contains("tolerance")) {
      // A spread over seeds of another budget, config or data says nothing about this copy
      // (retrained after the change): its tolerance goes, until --spread measures anew.
      // A tolerance set by hand (no spread) stays.
      const auto& old = expected[metric];
      const int64_t measured_at = old.contains("spread") ? old["spread"].value("budget_steps", step) : step;
      std::string stale;
      if (measured_at != step)
        stale = "came from seeds trained " + std::to_string(measured_at) + " steps, the copy " + std::to_string(step);
      else if (old.contains("spread") && !inputs_changed.empty())
        stale = "came from seeds of other inputs (" + inputs_changed + ")";
      if (stale.empty()) {
        x["tolerance"] = old["tolerance"];
        if (old.contains("spread")) x["spread"] = old["spread"];
      } else {
        std::cout << "zoo: " << name << ": the tolerance of " << metric << " " << stale
                  << ": dropped; measure it anew with --update --spread" << std::endl;
      }
    }
    e["expected"][metric] = x;
  }
  for (const auto& file : input_files(e)) e["fingerprint"][file] = sha256(file);
  if (fs::exists(dir + "/zoo_cost.json")) e["cost"] = json::parse(read_file(dir + "/zoo_cost.json"));
  e["cost"]["libtorch"] = TORCH_VERSION;
}

int run_check(const std::vector<std::string>& args) {
  po::options_description desc(
      "Scores each named reference model's trained copy (ROOT/NAME, its last checkpoint) and compares it with the manifest's\n"
      "expected metrics: ok within the tolerance, REGRESSED when worse by more, better when better by more\n"
      "(consider --update). It also exports each copy (its TorchScript twin must hold the model's tensors\n"
      "unchanged; an entry with \"export\": false has no export) and resumes a scratch copy of it for one update.\n"
      "Exit status 1 when a model regressed, its export or resume failed, or it has no trained copy. Options");
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
  const auto path = (*vm)["manifest"].as<std::string>();
  auto manifest = read_manifest(path);
  const auto spread_roots = vm->count("spread") ? (*vm)["spread"].as<std::vector<std::string>>() : std::vector<std::string>();
  const bool update = (*vm)["update"].as<bool>();
  if (!spread_roots.empty() && !update) throw UserError("--spread goes with --update (it sets the tolerances)");
  if (spread_roots.size() == 1) throw UserError("--spread needs at least 2 other roots: a spread over 2 seeds is not one");
  json rows = json::array();
  bool failed = false;
  for (const auto& name : chosen(*vm, manifest, path)) {
    auto& e = manifest["models"][name];
    const auto dir = run_dir(*vm, name);
    const auto add = [&](const std::string& metric, const json& expected, const json& measured, const std::string& v) {
      rows.push_back({{"model", name}, {"metric", metric}, {"expected", expected}, {"measured", measured}, {"verdict", v}});
    };
    if (!fs::exists(dir + "/checkpoint_last.pt")) {
      add("", nullptr, nullptr, "not trained (nlpzoo zoo train " + name + ")");
      failed = true;
      continue;
    }
    const int64_t step = read_checkpoint_header(dir + "/checkpoint_last.pt").state.step;
    const int64_t budget = e["budget_steps"].get<int64_t>();
    const std::string off_budget =
        step == budget ? "" : "trained " + std::to_string(step) + " of " + std::to_string(budget) + " steps";
    if (update && !off_budget.empty())
      throw UserError(name + ": " + dir + " was " + off_budget + ": --update records copies of the manifest's budget; "
                      "nothing was written (train it to the budget: nlpzoo zoo train " + name + ")");
    const auto measured = measure(e, dir);
    // An update is then checked like any copy, so its table shows the numbers now expected.
    if (update) update_entry(e, name, measured, step, dir, spread_roots);
    std::string not_comparable = fingerprint_mismatch(e);
    if (not_comparable.empty()) not_comparable = off_budget;
    const auto expected = e.value("expected", json::object());
    for (const auto& [metric, m] : measured.items()) {
      const json value = m.value("value", json());
      if (!expected.contains(metric)) {
        add(metric, nullptr, value, "not in the manifest");
        continue;
      }
      const auto& x = expected[metric];
      if (!not_comparable.empty()) {
        add(metric, x, value, "not comparable: " + not_comparable);
        continue;
      }
      if (!x.contains("tolerance") || x["tolerance"].is_null() || !value.is_number()) {
        add(metric, x, value, "no tolerance");
        continue;
      }
      const double diff = value.get<double>() - x["value"].get<double>();
      const std::string better = m.value("better", std::string());
      std::string verdict = "ok";
      if (std::abs(diff) > x["tolerance"].get<double>()) {
        const bool improved = (better == "higher" && diff > 0) || (better == "lower" && diff < 0);
        verdict = improved ? "better" : "REGRESSED";
        failed = failed || !improved;
      }
      add(metric, x, value, verdict);
    }
    // The artefacts beside the numbers: the export a user would make, and the resume.
    if (e.value("export", true)) {
      const auto why = export_problem(dir, name);
      add("export", nullptr, nullptr, why.empty() ? "ok" : "REGRESSED: " + why);
      failed = failed || !why.empty();
    }
    const auto why = resume_problem(dir, name, e, step);
    add("resume 1 step", nullptr, nullptr, why.empty() ? "ok" : "REGRESSED: " + why);
    failed = failed || !why.empty();
  }
  if (update) {
    atomic_write_text(path, manifest.dump(2) + "\n");
    std::cout << "zoo: wrote the measured numbers into " << path << " (review with git diff)" << std::endl;
  }
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
  return failed ? 1 : 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(zoo_list, "zoo list", "the reference models: budgets, expected metrics, trained copies", run_list);
NLPZOO_REGISTER_COMMAND(zoo_train, "zoo train", "train the reference models as checkpoints/MANIFEST.json says", run_train);
NLPZOO_REGISTER_COMMAND(zoo_check, "zoo check",
                        "score the trained reference models against the manifest; exit 1 on a regression", run_check);

}  // namespace nlpzoo::cli
