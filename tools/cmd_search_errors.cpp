// nlpzoo search-errors: error analysis of beam search on a translation run's split (is a wrong
// output the search's fault or the model's?), and --score-reference, the model's log-probability
// of each reference (fairseq-generate's --score-reference).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "core/excerpt.h"
#include "core/io.h"
#include "infer/search_errors.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "train/trainer.h"

namespace nlpzoo::cli {
namespace {

std::vector<int64_t> parse_beam_sizes(const std::string& text) {
  std::vector<int64_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      sizes.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UserError("--beam-sizes " + text + ": expected comma-separated beam sizes, e.g. 1,5,10");
    }
  }
  return sizes;
}

std::string percent(int64_t count, int64_t total) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f%%", total > 0 ? 100.0 * count / total : 0.0);
  return out;
}

nlohmann::json score_json(const ForcedScore& s) {
  return {{"log_prob", s.log_prob}, {"score", s.score}, {"length", s.length}};
}

// The `count` sentences whose last-beam verdict is `verdict`, by the margin between the two
// scores, widest first.
void print_worst(const SearchErrorReport& report, const ParallelCorpus& corpus, const Tokenizer& target,
                 SearchVerdict verdict, int64_t count) {
  if (count == 0) return;
  std::vector<const SentenceAnalysis*> chosen;
  for (const auto& s : report.sentences)
    if (s.outputs.back().verdict == verdict) chosen.push_back(&s);
  const auto margin = [](const SentenceAnalysis* s) {
    return std::abs(s->reference_score.score - s->outputs.back().model.score);
  };
  std::stable_sort(chosen.begin(), chosen.end(), [&](auto* a, auto* b) { return margin(a) > margin(b); });
  const auto beam = report.beams.back().beam_size;
  const std::string what = verdict == SearchVerdict::kSearchError ? "search errors" : "model errors";
  if (chosen.empty()) {
    std::cout << "\nno " << what << " at beam " << beam << "\n";
    return;
  }
  std::cout << "\nwidest " << what << " at beam " << beam << " (score margin = |score(reference) - score(output)|):\n";
  for (size_t i = 0; i < chosen.size() && static_cast<int64_t>(i) < count; ++i) {
    const auto& s = *chosen[i];
    std::cout << "  line " << s.index + 1 << " (margin " << margin(&s) << ")\n"
              << "    source:    " << excerpt(corpus.src[s.index]) << "\n"
              << "    reference: " << excerpt(corpus.tgt[s.index]) << "  [score " << s.reference_score.score << "]\n"
              << "    output:    " << excerpt(target.decode(s.outputs.back().tokens)) << "  [score "
              << s.outputs.back().model.score << "]\n";
  }
}

int run_search_errors(const std::vector<std::string>& args) {
  po::options_description desc(
      "For each sentence of a split, scores the reference y* by forced decoding and the search's output ŷ at\n"
      "each beam size, both as the model's log P / lp(length) with the search's length penalty. score(y*) >\n"
      "score(ŷ) is a search error (the model preferred the reference; the search missed it), otherwise a\n"
      "model error (the model prefers a wrong output); ŷ = y* is exact. Also how often the empty output\n"
      "outscores ŷ (Stahlberg and Byrne 2019). Options");
  add_run_flags(desc);
  add_search_flags(desc, /*with_n_best=*/false);
  desc.add_options()
      ("split", po::value<std::string>()->default_value("test"), "valid (or dev) | test")
      ("data-dir", po::value<std::string>(), "corpus folder (default: the run's data_dir)")
      ("beam-sizes", po::value<std::string>()->default_value("1,5,10"),
       "comma-separated beam sizes to compare (1 = greedy); default 1,5,10, or --beam-size when that is given")
      ("max-sentences", po::value<int64_t>()->default_value(0), "analyse only the split's first N sentences (0 = all)")
      ("worst", po::value<int64_t>()->default_value(3),
       "print this many search errors and model errors of the last beam size, widest score margin first")
      ("score-reference", po::bool_switch(),
       "only score the references, no search (as fairseq's --score-reference, but in natural-log units and "
       "scored as beam search ranks): per sentence 'line<TAB>log P<TAB>log P / lp(length)<TAB>per-piece "
       "log-probs', EOS's last; line counts from 1 as in the table")
      ("json", po::bool_switch(),
       "print one JSON object: {\"split\", \"checkpoint\", \"step\", \"beams\": [{\"beam_size\", \"sentences\", "
       "\"exact\", \"search_errors\", \"model_errors\", \"empty_beats_output\", \"cut\", \"mean_score\"}], "
       "\"sentences\": [{\"line\", \"reference\": {\"log_prob\", \"score\", \"length\"}, \"reference_cut\" (cut "
       "to the model's max_positions to be scored), \"empty\", \"outputs\": [{\"beam_size\", \"text\", \"log_prob\", "
       "\"score\", \"length\", \"cut\", \"verdict\"}]}]}. Scores are natural-log log P / lp(length); mean_score "
       "is the outputs' mean");
  auto vm = parse_args(args, desc, "search-errors --run-dir DIR [--split test] [--beam-sizes 1,5,10] [OPTIONS]");
  if (!vm) return 0;
  auto search = search_options(*vm);
  const bool one_beam = !(*vm)["beam-size"].defaulted();
  if (one_beam && !(*vm)["beam-sizes"].defaulted())
    throw UserError("--beam-size and --beam-sizes: give one (--beam-sizes 1,5,10 compares several)");
  const auto beam_sizes =
      one_beam ? std::vector<int64_t>{search.beam_size} : parse_beam_sizes((*vm)["beam-sizes"].as<std::string>());
  const bool score_reference = (*vm)["score-reference"].as<bool>();
  if (score_reference && (*vm)["json"].as<bool>())
    throw UserError("--score-reference prints one tab-separated line per sentence; drop --json");
  const Split split = parse_split((*vm)["split"].as<std::string>());
  if (split == Split::kTrain) throw UserError("--split: analyse valid or test, not train");
  const int64_t max_sentences = (*vm)["max-sentences"].as<int64_t>();
  if (max_sentences < 0) throw UserError("--max-sentences: must be 0 (all) or positive");
  const int64_t batch_size = (*vm)["batch-size"].as<int64_t>();
  const int64_t worst = (*vm)["worst"].as<int64_t>();
  if (worst < 0) throw UserError("--worst: must be 0 or positive");

  const std::string data_dir = vm->count("data-dir") ? (*vm)["data-dir"].as<std::string>() : "";
  auto run = load_run_from_flags(*vm, data_dir, {split});
  apply_run_search_defaults(search, *vm, run);
  const auto autocast = inference_precision(*vm, run);
  auto& task = translation_model(run);
  ParallelCorpus corpus = task.raw_split(split);
  if (max_sentences > 0 && max_sentences < static_cast<int64_t>(corpus.src.size())) {
    corpus.src.resize(max_sentences);
    corpus.tgt.resize(max_sentences);
  }
  const Translator translator(task.decoder(), task.source_tokenizer(), task.target_tokenizer(), task.max_positions(),
                              parse_device((*vm)["device"].as<std::string>()));

  if (score_reference) {
    std::vector<std::vector<int64_t>> references;
    std::vector<bool> cut;
    for (const auto& line : corpus.tgt) {
      bool was_cut = false;
      references.push_back(reference_ids(task.target_tokenizer(), line, task.max_positions(), &was_cut));
      cut.push_back(was_cut);
    }
    const auto scores = translator.force(corpus.src, references, batch_size);
    for (size_t i = 0; i < scores.size(); ++i) {
      if (scores[i].empty()) continue;  // an empty source line
      if (cut[i])
        std::cerr << "nlpzoo search-errors: warning: line " << i + 1 << ": reference cut to max_positions - 1 = "
                  << task.max_positions() - 1 << " pieces to be scored" << std::endl;
      const auto s = forced_score(scores[i], search);
      std::cout << i + 1 << "\t" << s.log_prob << "\t" << s.score << "\t";
      for (size_t t = 0; t < scores[i].size(); ++t) std::cout << (t ? " " : "") << scores[i][t];
      std::cout << "\n";
    }
    std::cout << std::flush;
    return 0;
  }

  const auto report = analyse_search_errors(translator, task.target_tokenizer(), corpus, task.max_positions(),
                                            beam_sizes, search, batch_size);
  const std::string checkpoint = checkpoint_in((*vm)["run-dir"].as<std::string>(), (*vm)["checkpoint"].as<std::string>());
  if ((*vm)["json"].as<bool>()) {
    nlohmann::json out = {{"split", to_string(split)}, {"checkpoint", checkpoint}, {"step", run.header.state.step}};
    out["beams"] = nlohmann::json::array();
    for (const auto& b : report.beams)
      out["beams"].push_back({{"beam_size", b.beam_size}, {"sentences", b.sentences}, {"exact", b.exact},
                              {"search_errors", b.search_errors}, {"model_errors", b.model_errors},
                              {"empty_beats_output", b.empty_beats_output}, {"cut", b.cut},
                              {"mean_score", b.mean_score}});
    out["sentences"] = nlohmann::json::array();
    for (const auto& s : report.sentences) {
      nlohmann::json outputs = nlohmann::json::array();
      for (const auto& o : s.outputs) {
        auto entry = score_json(o.model);
        entry["beam_size"] = o.beam_size;
        entry["text"] = task.target_tokenizer().decode(o.tokens);
        entry["cut"] = o.cut;
        entry["verdict"] = to_string(o.verdict);
        outputs.push_back(entry);
      }
      out["sentences"].push_back({{"line", s.index + 1}, {"reference", score_json(s.reference_score)},
                                  {"reference_cut", s.reference_cut}, {"empty", score_json(s.empty)},
                                  {"outputs", outputs}});
    }
    std::cout << out.dump() << std::endl;
    return 0;
  }
  std::cout << to_string(split) << " (" << checkpoint << ", step " << run.header.state.step << "): "
            << report.sentences.size() << " sentences";
  if (report.empty_sources > 0) std::cout << " (" << report.empty_sources << " empty source lines left out)";
  std::cout << "; scores are log P / lp(length), natural log, alpha " << search.length_penalty << "\n";
  if (report.references_cut > 0)
    std::cout << report.references_cut << " references were cut to max_positions - 1 = " << task.max_positions() - 1
              << " pieces to be scored\n";
  std::cout << "beam  exact   search errors  model errors  empty beats output  cut at max length  mean score\n";
  for (const auto& b : report.beams) {
    char line[200];
    std::snprintf(line, sizeof line, "%4lld  %-6s  %-13s  %-12s  %-18s  %-17s  %.4f\n", static_cast<long long>(b.beam_size),
                  percent(b.exact, b.sentences).c_str(), percent(b.search_errors, b.sentences).c_str(),
                  percent(b.model_errors, b.sentences).c_str(), percent(b.empty_beats_output, b.sentences).c_str(),
                  percent(b.cut, b.sentences).c_str(), b.mean_score);
    std::cout << line;
  }
  std::cout << "(an output cut at the maximum length is scored with an EOS it never chose: its search error may be "
               "the length cap's; mean score: of the outputs)\n";
  print_worst(report, corpus, task.target_tokenizer(), SearchVerdict::kSearchError, worst);
  print_worst(report, corpus, task.target_tokenizer(), SearchVerdict::kModelError, worst);
  std::cout << std::flush;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(search_errors, "search-errors",
                        "error analysis of beam search: search errors against model errors per beam size (translation)",
                        run_search_errors);

}  // namespace nlpzoo::cli
