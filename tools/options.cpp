#include "tools/options.h"

#include <iostream>

namespace nlpzoo::cli {

std::optional<po::variables_map> parse_args(const std::vector<std::string>& args,
                                            const po::options_description& desc,
                                            const std::string& usage,
                                            const std::vector<std::string>& positional) {
  po::options_description all(desc);
  all.add_options()("help,h", "show this help and exit");
  po::positional_options_description pos;
  for (size_t i = 0; i < positional.size(); ++i)
    pos.add(positional[i].c_str(), i + 1 == positional.size() ? -1 : 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "Usage: nlpzoo " << usage << "\n\n" << all << std::flush;
    return std::nullopt;
  }
  po::notify(vm);
  return vm;
}

}  // namespace nlpzoo::cli

#include <filesystem>

#include "core/io.h"
#include "train/checkpoint.h"

namespace nlpzoo::cli {

std::string checkpoint_in(const std::string& run_dir, const std::string& which) {
  // A file of its own (an average written with --out elsewhere).
  if (which.size() > 3 && which.compare(which.size() - 3, 3, ".pt") == 0) {
    require_file(which, "checkpoint");
    return which;
  }
  const bool step = !which.empty() && which.find_first_not_of("0123456789") == std::string::npos;
  if (which != "best" && which != "last" && which != "averaged" && !step)
    throw UserError("--checkpoint " + which + ": expected best, last, averaged, a step kept with keep_last, or a .pt file");
  const std::string path = run_dir + "/checkpoint_" + which + ".pt";
  if (std::filesystem::exists(path)) return path;
  if (which == "averaged")
    throw UserError(path + ": no averaged checkpoint yet; write one with: nlpzoo checkpoint average --run-dir " + run_dir);
  if (step) {
    std::string kept;
    for (const auto& [at, file] : periodic_checkpoints(run_dir)) kept += (kept.empty() ? "" : ", ") + std::to_string(at);
    throw UserError(path + ": no such checkpoint; " +
                    (kept.empty() ? "this run keeps none (train with keep_last = N to keep the last N validations)"
                                  : "the steps kept are " + kept));
  }
  if (std::filesystem::exists(run_dir + "/checkpoint_last.pt"))
    throw UserError(path + ": no such checkpoint yet (the run stopped before its first validation); use --checkpoint "
                    "last, or continue training with: nlpzoo train --run-dir " + run_dir + " --resume");
  throw UserError(path + ": no such checkpoint (train one with: nlpzoo train --config FILE.ini --run-dir " + run_dir + ")");
}

std::vector<std::string> read_stdin_lines() {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace nlpzoo::cli
