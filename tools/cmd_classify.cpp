// nlpzoo classify: stdin sentences in, "label<TAB>probability" of the most probable class out
// (a regression model: its score), one line per input line; a sentence-pair model reads two
// tab-separated sentences per line. Input is raw text: the run normalizes it as it did its training
// data (config keys lowercase and split_punctuation), so "Completely lacking in good taste."
// reads as SST-2's "completely lacking in good taste .". An empty line gives an empty line.
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

int run_classify(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_run_flags(desc);
  desc.add_options()("batch-size", po::value<int64_t>()->default_value(64), "sentences classified together");
  auto vm = parse_args(args, desc, "classify --run-dir DIR [--checkpoint WHICH] [--batch-size N] [--device D] "
                                   "< sentences.txt > labels.tsv  (pair tasks: sentence A<TAB>sentence B per "
                                   "line; regression: the score)");
  if (!vm) return 0;
  const int64_t batch_size = (*vm)["batch-size"].as<int64_t>();
  if (batch_size < 1) throw UserError("--batch-size: must be at least 1");
  auto run = load_run_from_flags(*vm);
  const auto autocast = inference_precision(*vm, run);
  auto& task = sentence_classifier(run);
  const auto lines = read_stdin_lines();
  std::vector<std::string> sentences;
  std::vector<size_t> at;  // line index of each non-empty sentence
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    sentences.push_back(lines[i]);
    at.push_back(i);
  }
  const auto predictions = task.predict(sentences, parse_device((*vm)["device"].as<std::string>()), batch_size);
  std::vector<std::string> out(lines.size());
  for (size_t k = 0; k < predictions.size(); ++k) {
    const auto& p = predictions[k];
    std::ostringstream line;
    if (task.labels().empty())  // a regression model: its score
      line << std::fixed << std::setprecision(4) << p.score;
    else
      line << task.labels().at(p.label_id) << "\t" << std::fixed << std::setprecision(4)
           << p.probabilities.at(p.label_id);
    out[at[k]] = line.str();
  }
  for (const auto& l : out) std::cout << l << "\n";
  std::cout << std::flush;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(classify, "classify", "label stdin sentences (or tab-separated pairs) with a trained classifier "
                        "(label<TAB>probability, or a regression score)",
                        run_classify);

}  // namespace nlpzoo::cli
