// nlpzoo evaluate: a trained model's scores on a split, as its task defines them
// (Task::evaluate): loss and perplexity; BLEU of greedy and beam search for translation;
// accuracy, macro-F1 and the confusion matrix for classification; the held-out loss for word
// vectors. One human line and the task's details by default; --json prints one JSON object.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "core/io.h"
#include "infer/search.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "train/trainer.h"

namespace nlpzoo::cli {
namespace {

// Sends what std::cout receives to std::cerr while it lives: with --json, standard output
// carries the JSON object alone, and what tasks print while loading goes to the log.
class CoutToCerr {
 public:
  explicit CoutToCerr(bool active) : saved_(active ? std::cout.rdbuf(std::cerr.rdbuf()) : nullptr) {}
  ~CoutToCerr() {
    if (saved_ != nullptr) std::cout.rdbuf(saved_);
  }
  CoutToCerr(const CoutToCerr&) = delete;
  CoutToCerr& operator=(const CoutToCerr&) = delete;

 private:
  std::streambuf* saved_;
};

int run_evaluate(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_run_flags(desc);
  desc.add_options()
      ("split", po::value<std::string>(),
       "valid (or dev) | test. Default: test, or valid for a task without a test split (word vectors)")
      ("data-dir", po::value<std::string>(), "corpus folder (default: the run's data_dir)")
      ("no-bleu", po::bool_switch(), "the loss-based scores only: no decoding, so no BLEU")
      ("max-sentences", po::value<int64_t>()->default_value(0),
       "translation: decode (BLEU) only the split's first N sentences, said in the report; loss and perplexity "
       "stay over the whole split (0 = all)")
      ("json", po::bool_switch(),
       "print one JSON object instead of the human report: {\"task\", \"split\", \"checkpoint\", \"step\", "
       "\"metrics\": {NAME: {\"value\", \"better\": \"higher\"|\"lower\" (absent for counts), \"unit\"}}}");
  add_search_flags(desc, /*with_n_best=*/false);
  auto vm = parse_args(args, desc, "evaluate --run-dir DIR [--split valid|test] [--json] [OPTIONS]");
  if (!vm) return 0;
  auto search = search_options(*vm);
  if ((*vm)["max-sentences"].as<int64_t>() < 0) throw UserError("--max-sentences: must be 0 (all) or positive");
  const bool json = (*vm)["json"].as<bool>();
  const auto run_dir = (*vm)["run-dir"].as<std::string>();
  const auto which = (*vm)["checkpoint"].as<std::string>();
  const auto path = checkpoint_in(run_dir, which);
  const Split split = vm->count("split")
                          ? parse_split((*vm)["split"].as<std::string>())
                          : make_task(read_checkpoint_header(path).task)->default_evaluation_split();
  if (split == Split::kTrain) throw UserError("--split: evaluate valid or test, not train");

  Metrics metrics;
  LoadedRun run;
  {
    const CoutToCerr quiet(json);
    // The corpus folder is the run's unless given.
    const std::string data_dir = vm->count("data-dir") ? (*vm)["data-dir"].as<std::string>() : "";
    run = load_run_from_flags(*vm, data_dir, {split});
    apply_run_search_defaults(search, *vm, run);
    const auto autocast = inference_precision(*vm, run);
    EvaluationOptions options;
    options.device = parse_device((*vm)["device"].as<std::string>());
    options.batch_size = (*vm)["batch-size"].as<int64_t>();
    options.decode = !(*vm)["no-bleu"].as<bool>();
    options.max_decoded = (*vm)["max-sentences"].as<int64_t>();
    options.search = &search;
    // A checkpoint given as a file is named by its stem (hyp.test.avg5.greedy.txt).
    const auto label = which == path ? std::filesystem::path(which).stem().string() : which;
    options.output_prefix = run_dir + "/hyp." + to_string(split) + "." + label;
    metrics = run.task->evaluate(split, options);
  }
  if (json) {
    const nlohmann::json out = {{"task", run.header.task},
                                {"split", to_string(split)},
                                {"checkpoint", path},
                                {"step", run.header.state.step},
                                {"metrics", metrics.to_json()}};
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << to_string(split) << " (" << path << ", step " << run.header.state.step << "): " << metrics.line()
              << "\n"
              << metrics.details << std::flush;
  }
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(evaluate, "evaluate", "a trained model's scores on a split (loss, perplexity, BLEU, accuracy)",
                        run_evaluate);

}  // namespace nlpzoo::cli
