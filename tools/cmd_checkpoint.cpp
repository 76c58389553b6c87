// nlpzoo checkpoint upgrade: rewrite version-1 checkpoints (TorchScript archives) as version 2
// (safetensors layout), whose loading runs nothing from the file.
#include <filesystem>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

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

}  // namespace

NLPZOO_REGISTER_COMMAND(checkpoint_upgrade, "checkpoint upgrade",
                        "rewrite version-1 checkpoints (TorchScript archives) as version 2 (safetensors layout)", run_upgrade);

}  // namespace nlpzoo::cli
