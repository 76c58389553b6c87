// nlpzoo bleu: sacreBLEU-compatible corpus BLEU of a hypothesis file against references.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "core/io.h"
#include "infer/bleu.h"
#include "tools/command.h"
#include "tools/options.h"

namespace nlpzoo::cli {
namespace {

int run_bleu(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("ref", po::value<std::vector<std::string>>()->required(),
       "reference file, one segment per line; repeat for several references per segment "
       "(required)")
      ("hyp", po::value<std::string>(),
       "hypothesis file, one segment per line (default: read standard input)")
      ("tokenize", po::value<std::string>()->default_value("13a"),
       "tokenizer applied to both sides: 13a (mteval-v13a, sacreBLEU's default) or none "
       "(split on whitespace only)")
      ("lowercase", po::bool_switch(), "lowercase both sides first (default: off, case-sensitive)")
      ("smooth", po::value<std::string>()->default_value("exp"),
       "smoothing of orders without a match: exp (NIST 1/2^i), floor (value/total), add-k "
       "((count+k)/(total+k) for n >= 2) or none")
      ("smooth-value", po::value<double>(),
       "value for --smooth floor or add-k (default: 0.1 for floor, 1 for add-k; ignored by exp "
       "and none)")
      ("effective-order", po::bool_switch(),
       "stop the geometric mean at the first order with no hypothesis n-grams (default: off; "
       "sacreBLEU turns it on for sentence BLEU)")
      ("max-ngram-order", po::value<int>()->default_value(4),
       "highest n-gram order N (BLEU-N; default 4)");
  auto vm = parse_args(args, desc, "bleu --ref FILE [--ref FILE ...] [--hyp FILE] [OPTIONS]");
  if (!vm) return 0;

  BleuOptions opts;
  opts.tokenize = parse_bleu_tokenize((*vm)["tokenize"].as<std::string>());
  opts.smooth_method = parse_bleu_smooth((*vm)["smooth"].as<std::string>());
  if (vm->count("smooth-value")) {
    opts.smooth_value = (*vm)["smooth-value"].as<double>();
    // A negative or NaN value would make a precision negative or NaN and print "BLEU = -nan".
    if (!(std::isfinite(*opts.smooth_value) && *opts.smooth_value >= 0))
      throw UserError("--smooth-value: must be a finite number >= 0, got " + c10::str(*opts.smooth_value));
  }
  opts.lowercase = (*vm)["lowercase"].as<bool>();
  opts.use_effective_order = (*vm)["effective-order"].as<bool>();
  opts.max_ngram_order = (*vm)["max-ngram-order"].as<int>();
  if (opts.max_ngram_order < 1)
    throw UserError("--max-ngram-order: must be at least 1 (got " +
                    std::to_string(opts.max_ngram_order) + ")");

  std::string hyp_name = "<stdin>";
  std::vector<std::string> hyps;
  if (vm->count("hyp")) {
    hyp_name = (*vm)["hyp"].as<std::string>();
    hyps = read_lines(hyp_name);
  } else {
    for (std::string line; std::getline(std::cin, line);) hyps.push_back(std::move(line));
  }
  const auto ref_files = (*vm)["ref"].as<std::vector<std::string>>();
  std::vector<std::vector<std::string>> refs;
  for (const auto& file : ref_files) {
    refs.push_back(read_lines(file));
    // sacreBLEU pairs segments by line; a count mismatch almost always means the wrong file.
    if (refs.back().size() != hyps.size())
      throw UserError("hypothesis " + hyp_name + " has " + std::to_string(hyps.size()) +
                      " lines but reference " + file + " has " +
                      std::to_string(refs.back().size()) + " lines");
  }
  const BleuScore score = corpus_bleu(hyps, refs, opts);
  std::cout << score.format() << "\n"
            << bleu_signature(opts, static_cast<int>(refs.size())) << "\n";
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(bleu, "bleu", "sacreBLEU-compatible corpus BLEU of --hyp (or stdin) against --ref files",
                        run_bleu);

}  // namespace nlpzoo::cli
