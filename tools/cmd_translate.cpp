// nlpzoo translate: stdin sentences in, detokenized translations out.
#include <filesystem>
#include <iostream>

#include "core/io.h"
#include "infer/attention_plot.h"
#include "infer/translator.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "train/trainer.h"

namespace nlpzoo::cli {

namespace {

int run_translate(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_run_flags(desc);
  add_search_flags(desc, /*with_n_best=*/true);
  desc.add_options()
      ("attention-png", po::value<std::string>(),
       "draw the attention weights of the first non-empty sentence's best translation as a heatmap PNG")
      ("attention-head", po::value<int64_t>()->default_value(-1),
       "Transformer runs: which head of the last decoder layer's cross-attention to draw (-1 = mean over heads)")
      ("max-positions", po::value<int64_t>(),
       "cut each source to this many pieces, EOS included, with a warning naming the line (0 = no limit). Default: "
       "the model's limit: the run's max_positions for a Transformer with learned positions (at most that), none "
       "for the RNN and sinusoidal or relative positions");
  auto vm = parse_args(args, desc, "translate --run-dir DIR [OPTIONS] < source.txt > translations.txt");
  if (!vm) return 0;
  auto options = search_options(*vm);
  options.keep_attention = vm->count("attention-png") > 0;
  if (options.keep_attention) {  // fail before translating, not after
    const auto dir = std::filesystem::absolute((*vm)["attention-png"].as<std::string>()).parent_path();
    if (!std::filesystem::is_directory(dir))
      throw UserError("--attention-png: folder " + dir.string() + " does not exist");
  }
  auto run = load_run_from_flags(*vm);
  apply_run_search_defaults(options, *vm, run);
  const auto autocast = inference_precision(*vm, run);
  auto& task = translation_model(run);
  if (const int64_t head = (*vm)["attention-head"].as<int64_t>(); head != -1) {
    const int64_t heads = task.attention_heads();
    if (heads == 0) throw UserError("--attention-head: only for models with multi-head attention (arch=transformer)");
    if (head < 0 || head >= heads) throw UserError("--attention-head: must be -1 or in [0, " + std::to_string(heads) + ")");
    task.set_attention_head(head);
  }
  int64_t max_positions = task.max_positions();
  if (vm->count("max-positions")) {
    const int64_t asked = (*vm)["max-positions"].as<int64_t>();
    if (asked < 0 || asked == 1) throw UserError("--max-positions: must be 0 (no limit) or at least 2, got " + std::to_string(asked));
    if (max_positions > 0 && (asked == 0 || asked > max_positions))
      throw UserError("--max-positions " + std::to_string(asked) + ": this model's learned positions end at max_positions=" +
                      std::to_string(max_positions) + " (rows past it were never trained); give at most that");
    max_positions = asked;
  }
  const Translator translator(task.decoder(), task.source_tokenizer(), task.target_tokenizer(), max_positions,
                              parse_device((*vm)["device"].as<std::string>()));
  const auto lines = read_stdin_lines();
  const auto results = translator.translate(lines, options, (*vm)["batch-size"].as<int64_t>());

  const bool token_scores = (*vm)["token-scores"].as<bool>();
  const bool n_best_format = options.n_best > 1 || token_scores;
  bool plotted = false;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.truncated)
      std::cerr << "nlpzoo translate: warning: stdin line " << i + 1 << ": longer than max_positions=" << max_positions
                << " pieces; translated its first " << max_positions - 1 << " pieces (see --max-positions)" << std::endl;
    if (r.hypotheses.empty()) {  // an empty line translates to an empty line (in either format)
      std::cout << (n_best_format ? std::to_string(i) + " |||  ||| 0" + (token_scores ? " |||" : "") : "") << "\n";
      continue;
    }
    if (!n_best_format) {
      std::cout << translator.text(r.hypotheses.front()) << "\n";
    } else {
      for (const auto& h : r.hypotheses) {
        std::cout << i << " ||| " << translator.text(h) << " ||| " << h.score;
        if (token_scores) {
          std::cout << " |||";
          for (double lp : h.token_log_probs) std::cout << " " << lp;
        }
        std::cout << "\n";
      }
    }
    if (options.keep_attention && !plotted) {
      const auto& best = r.hypotheses.front();
      plot_attention_png((*vm)["attention-png"].as<std::string>(), r.source_pieces, translator.target_pieces(best),
                         best.attention);
      plotted = true;
    }
  }
  std::cout << std::flush;
  if (options.keep_attention && !plotted)
    std::cerr << "nlpzoo translate: warning: no non-empty sentence, no attention plot" << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(translate, "translate", "translate stdin lines with a trained model (greedy or beam search)",
                        run_translate);

}  // namespace nlpzoo::cli
