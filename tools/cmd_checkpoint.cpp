// nlpzoo checkpoint upgrade: rewrite version-1 checkpoints (TorchScript archives) as version 2
// (safetensors layout), whose loading runs nothing from the file; nlpzoo checkpoint average: the
// mean of a run's last periodic checkpoints.
#include <filesystem>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "core/io.h"
#include "tools/command.h"
#include "tools/options.h"
#include "train/checkpoint.h"
#include "train/run_lock.h"

namespace fs = std::filesystem;

namespace nlpzoo::cli {
namespace {

int run_upgrade(const std::vector<std::string>& args) {
  po::options_description desc(
      "Rewrites each version-1 checkpoint (checkpoint_*.pt of a run folder, or the files given) as\n"
      "version 2, atomically; version-2 files are checked and left as they are. Version 1 is read\n"
      "through TorchScript, so upgrade only files from a source you trust (a file carrying\n"
      "TorchScript code is refused). A run folder (one given, or one holding config.ini beside a file\n"
      "given) is locked meanwhile: it is refused while nlpzoo train runs in it. Options");
  desc.add_options()("paths", po::value<std::vector<std::string>>()->required(),
                     "run folders or checkpoint files (positional; one or more)");
  auto vm = parse_args(args, desc, "checkpoint upgrade RUN_DIR|FILE.pt ...", {"paths"});
  if (!vm) return 0;
  std::vector<std::string> files;
  // The run folders written, each locked once (a second lock of this process would conflict).
  std::map<fs::path, std::unique_ptr<RunLock>> locks;
  const auto lock = [&](const fs::path& dir) {
    auto& held = locks[fs::weakly_canonical(dir)];
    if (!held) held = std::make_unique<RunLock>(dir.string());
  };
  for (const auto& path : (*vm)["paths"].as<std::vector<std::string>>()) {
    if (!fs::is_directory(path)) {
      const auto dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
      if (fs::exists(path) && fs::exists(dir / "config.ini")) lock(dir);
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(path)) {
      const auto name = entry.path().filename().string();
      if (entry.is_regular_file() && name.rfind("checkpoint_", 0) == 0 && entry.path().extension() == ".pt")
        found.push_back(entry.path().string());
    }
    if (found.empty()) throw UserError(path + ": no checkpoint_*.pt in this folder");
    std::sort(found.begin(), found.end());
    lock(path);
    files.insert(files.end(), found.begin(), found.end());
  }
  for (const auto& file : files) {
    const bool upgraded = upgrade_checkpoint(file);  // first: its warning goes before the line
    std::cout << file << (upgraded ? ": upgraded to version 2" : ": already version 2") << std::endl;
  }
  return 0;
}

int run_average(const std::vector<std::string>& args) {
  po::options_description desc(
      "Averages the parameters of a run's last N periodic checkpoints (checkpoint_<step>.pt, kept when the\n"
      "run trains with keep_last = N or more) into checkpoint_averaged.pt, as fairseq's\n"
      "average_checkpoints.py: the element-wise mean of every weight. evaluate, translate and export read it\n"
      "with --checkpoint averaged; a run does not resume from it (it holds no optimizer state). Writing into\n"
      "the run folder is refused while nlpzoo train runs there; with --out elsewhere it may run beside\n"
      "training (then read it with --checkpoint FILE.pt). Options");
  desc.add_options()
      ("run-dir", po::value<std::string>()->required(), "run folder written by nlpzoo train (required)")
      ("last", po::value<int64_t>()->default_value(0), "average the N newest periodic checkpoints (0 = every one kept)")
      ("out", po::value<std::string>(), "file to write (default: RUN_DIR/checkpoint_averaged.pt)");
  auto vm = parse_args(args, desc, "checkpoint average --run-dir DIR [--last N] [--out FILE.pt]");
  if (!vm) return 0;
  const auto run_dir = (*vm)["run-dir"].as<std::string>();
  const auto last = (*vm)["last"].as<int64_t>();
  if (last < 0) throw UserError("--last " + std::to_string(last) + ": must be 0 (every one kept) or positive");
  require_file(run_dir + "/config.ini", "run folder's config");
  const auto out = vm->count("out") ? (*vm)["out"].as<std::string>() : run_dir + "/checkpoint_averaged.pt";
  // Writing into the run folder takes its lock; an average written elsewhere only reads it, so
  // it may be made while the run trains (as with fairseq's script).
  std::optional<RunLock> lock;
  if (fs::weakly_canonical(fs::absolute(out).parent_path()) == fs::weakly_canonical(run_dir)) lock.emplace(run_dir);
  auto kept = periodic_checkpoints(run_dir);
  if (kept.empty() || static_cast<int64_t>(kept.size()) < last)
    throw UserError(run_dir + ": " + std::to_string(kept.size()) + " periodic checkpoints (checkpoint_<step>.pt), " +
                    (last > 0 ? std::to_string(last) : std::string("at least one")) +
                    " wanted: train with keep_last = N (in the config or --keep_last N) to keep the last N validations");
  if (last > 0) kept.erase(kept.begin(), kept.end() - last);
  std::vector<std::string> paths;
  for (const auto& [step, path] : kept) {
    // The name is only a name: a file copied or renamed in would be averaged as another step.
    if (const int64_t held = read_checkpoint_header(path).state.step; held != step)
      throw UserError(path + ": named for step " + std::to_string(step) + " but holds step " + std::to_string(held) +
                      "; remove or rename it (nlpzoo train keeps checkpoint_<step>.pt with keep_last)");
    paths.push_back(path);
  }
  average_checkpoints(paths, out);
  std::cout << out << ": the mean of " << paths.size() << (paths.size() == 1 ? " checkpoint" : " checkpoints")
            << " (steps " << kept.front().first << " to " << kept.back().first << ")" << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(checkpoint_average, "checkpoint average",
                        "average a run's last N periodic checkpoints (keep_last) into checkpoint_averaged.pt", run_average);
NLPZOO_REGISTER_COMMAND(checkpoint_upgrade, "checkpoint upgrade",
                        "rewrite version-1 checkpoints (TorchScript archives) as version 2 (safetensors layout)", run_upgrade);

}  // namespace nlpzoo::cli
