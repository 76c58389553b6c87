// nlpzoo fill-mask: stdin lines holding [MASK] in, for each [MASK] the k most probable pieces
// with their probabilities out (BERT's cloze task, Devlin et al. 2019 sec. 3.1):
//   line 1, [MASK] 1: ▁heaven 0.4211  ▁earth 0.1022  ...
// one output line per [MASK], "line<TAB>mask<TAB>piece probability ...". A non-empty line
// without [MASK] is an error that echoes it (nothing is printed for it); an empty line is skipped.
// A [MASK] beyond the model's max_positions gets "(none: beyond max_positions)".
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/io.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "train/trainer.h"

namespace nlpzoo::cli {

namespace {

int run_fill_mask(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_run_flags(desc);
  desc.add_options()("top-k,k", po::value<int64_t>()->default_value(5), "candidates per [MASK]");
  auto vm = parse_args(args, desc, "fill-mask --run-dir DIR [-k 5] [--checkpoint WHICH] [--device D] "
                                   "< lines-with-[MASK].txt");
  if (!vm) return 0;
  const int64_t k = (*vm)["top-k"].as<int64_t>();
  if (k < 1) throw UserError("-k: must be at least 1, got " + std::to_string(k));
  auto run = load_run_from_flags(*vm);
  const auto autocast = inference_precision(*vm, run);
  auto& filler = mask_filler(run);
  const auto device = parse_device((*vm)["device"].as<std::string>());
  const auto lines = read_stdin_lines();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    std::vector<std::vector<MaskCandidate>> masks;
    try {
      masks = filler.fill_mask(lines[i], k, device);
    } catch (const UserError& e) {
      throw UserError("stdin line " + std::to_string(i + 1) + ": " + e.what());
    }
    for (size_t m = 0; m < masks.size(); ++m) {
      std::ostringstream out;
      out << i + 1 << "\t" << m + 1 << "\t" << std::fixed << std::setprecision(4);
      if (masks[m].empty()) out << "(none: beyond max_positions)";
      for (size_t j = 0; j < masks[m].size(); ++j)
        out << (j ? "  " : "") << masks[m][j].piece << " " << masks[m][j].probability;
      std::cout << out.str() << "\n";
    }
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(fill_mask, "fill-mask",
                        "guess the [MASK] pieces of stdin lines with a masked_lm or electra run (top-k with probabilities)",
                        run_fill_mask);

}  // namespace nlpzoo::cli
