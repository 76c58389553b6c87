// nlpzoo evaluate: loss and perplexity of a split; for translation runs BLEU of greedy and
// beam-search output against the split's references, for classification runs accuracy,
// macro-F1 and the confusion matrix.
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "datasets/io.h"
#include "infer/bleu.h"
#include "infer/classification_metrics.h"
#include "infer/translator.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "train/trainer.h"

namespace nlpzoo::cli {
namespace {

// Translates the split's sources, writes them to `hyp_path` and prints their BLEU.
void report_bleu(const Translator& translator, const ParallelCorpus& corpus, const SearchOptions& options,
                 int64_t batch_size, const std::string& label, const std::string& hyp_path) {
  const auto start = std::chrono::steady_clock::now();
  const auto results = translator.translate(corpus.src, options, batch_size);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::string> hyps;
  std::string text;
  for (const auto& r : results) {
    hyps.push_back(r.hypotheses.empty() ? "" : translator.text(r.hypotheses.front()));
    text += hyps.back() + "\n";
  }
  atomic_write_text(hyp_path, text);
  const BleuOptions bleu;
  std::cout << label << ": " << corpus_bleu(hyps, {corpus.tgt}, bleu).format() << "\n"
            << "  " << bleu_signature(bleu, 1) << "\n"
            << "  " << hyps.size() << " sentences in " << std::fixed << std::setprecision(1) << seconds << " s ("
            << hyps.size() / std::max(seconds, 1e-9) << " sent/s); output in " << hyp_path << "\n"
            << std::defaultfloat << std::flush;
}

// Classifies the split's sentences and prints accuracy, macro-F1, per-label scores and the
// confusion matrix against its gold labels.
void report_classification(ClassificationTask& task, Split split, const torch::Device& device, int64_t batch_size) {
  const auto predictions = task.predict(task.raw_split(split).sentences, device, batch_size);
  std::vector<int64_t> predicted;
  for (const auto& p : predictions) predicted.push_back(p.label_id);
  std::cout << classification_scores(task.gold(split), predicted, task.labels()).report() << std::flush;
}

int run_evaluate(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_run_flags(desc);
  desc.add_options()
      ("split", po::value<std::string>()->default_value("test"), "valid (or dev) | test")
      ("data-dir", po::value<std::string>(), "corpus folder (default: the run's data_dir)")
      ("no-bleu", po::bool_switch(), "report loss and perplexity only (no decoding)");
  add_search_flags(desc, /*with_n_best=*/false);
  auto vm = parse_args(args, desc, "evaluate --run-dir DIR [--split valid|test] [OPTIONS]");
  if (!vm) return 0;
  const Split split = parse_split((*vm)["split"].as<std::string>());
  if (split == Split::kTrain) throw UserError("--split: evaluate valid or test, not train");
  const auto options = search_options(*vm);
  // The corpus folder is the run's unless given.
  const std::string data_dir = vm->count("data-dir") ? (*vm)["data-dir"].as<std::string>() : "";
  auto run = load_run_from_flags(*vm, data_dir, {split});
  const auto autocast = inference_precision(*vm, run);
  const auto path = checkpoint_in((*vm)["run-dir"].as<std::string>(), (*vm)["checkpoint"].as<std::string>());
  const auto device = parse_device((*vm)["device"].as<std::string>());
  const auto loss = evaluate_loss(*run.task, split, device);
  std::cout << to_string(split) << " (" << path << ", step " << run.header.state.step << "): loss " << std::fixed
            << std::setprecision(4) << loss.loss;
  // A classifier's loss is summed per sentence; perplexity is a sequence model's measure.
  if (run.header.task == "classification") {
    std::cout << " nats/sentence | " << loss.tokens << " sentences\n" << std::defaultfloat << std::flush;
    report_classification(classification_task(run), split, device, (*vm)["batch-size"].as<int64_t>());
    return 0;
  }
  std::cout << " nats/token | perplexity " << std::setprecision(2) << loss.perplexity() << " | " << loss.tokens
            << " target tokens\n"
            << std::defaultfloat << std::flush;
  if (run.header.task != "translation") return 0;
  if ((*vm)["no-bleu"].as<bool>()) return 0;

  auto& task = translation_task(run);
  const Translator translator(task.decoder(), task.source_tokenizer(), task.target_tokenizer(), task.max_positions(),
                              device);
  const auto& corpus = task.raw_split(split);
  const int64_t batch_size = (*vm)["batch-size"].as<int64_t>();
  const std::string prefix = (*vm)["run-dir"].as<std::string>() + "/hyp." + to_string(split) + "." +
                             (*vm)["checkpoint"].as<std::string>();
  SearchOptions greedy = options;
  greedy.beam_size = 1;
  report_bleu(translator, corpus, greedy, batch_size, "BLEU greedy", prefix + ".greedy.txt");
  if (options.beam_size > 1)
    report_bleu(translator, corpus, options, batch_size, "BLEU beam " + std::to_string(options.beam_size),
                prefix + ".beam" + std::to_string(options.beam_size) + ".txt");
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(evaluate, "evaluate", "loss, perplexity and BLEU of a trained model on a split", run_evaluate);

}  // namespace nlpzoo::cli
