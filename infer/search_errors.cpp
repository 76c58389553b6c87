#include "infer/search_errors.h"

#include <algorithm>
#include <numeric>

#include "core/io.h"

namespace nlpzoo {

std::string to_string(SearchVerdict verdict) {
  switch (verdict) {
    case SearchVerdict::kExact: return "exact";
    case SearchVerdict::kSearchError: return "search_error";
    case SearchVerdict::kModelError: return "model_error";
  }
  return "?";
}

ForcedScore forced_score(const std::vector<double>& log_probs, const SearchOptions& search) {
  ForcedScore s;
  s.length = static_cast<int64_t>(log_probs.size());
  s.log_prob = std::accumulate(log_probs.begin(), log_probs.end(), 0.0);
  s.score = s.log_prob / length_penalty(s.length, search.length_penalty, search.length_penalty_form);
  return s;
}

std::vector<int64_t> reference_ids(const Tokenizer& target, const std::string& text, int64_t max_positions, bool* cut) {
  auto ids = target.encode(text);
  *cut = max_positions > 0 && static_cast<int64_t>(ids.size()) > max_positions - 1;
  if (*cut) ids.resize(max_positions - 1);
  return ids;
}

SearchErrorReport analyse_search_errors(const Translator& translator, const Tokenizer& target,
                                        const ParallelCorpus& corpus, int64_t max_positions,
                                        const std::vector<int64_t>& beam_sizes, const SearchOptions& search,
                                        int64_t batch_size) {
  if (beam_sizes.empty()) throw UserError("--beam-sizes: give at least one beam size");
  for (size_t i = 0; i < beam_sizes.size(); ++i) {
    const int64_t k = beam_sizes[i];
    if (k < 1) throw UserError("--beam-sizes: " + std::to_string(k) + " is not a beam size (at least 1)");
    if (std::find(beam_sizes.begin(), beam_sizes.begin() + i, k) != beam_sizes.begin() + i)
      throw UserError("--beam-sizes: " + std::to_string(k) + " is given twice");
  }
  SearchErrorReport report;
  std::vector<std::string> sources;
  std::vector<std::vector<int64_t>> references;
  for (size_t i = 0; i < corpus.src.size(); ++i) {
    if (corpus.src[i].find_first_not_of(" \t\r\n") == std::string::npos) {  // nothing to translate
      ++report.empty_sources;
      continue;
    }
    SentenceAnalysis sentence;
    sentence.index = static_cast<int64_t>(i);
    sentence.reference = reference_ids(target, corpus.tgt[i], max_positions, &sentence.reference_cut);
    report.references_cut += sentence.reference_cut;
    sources.push_back(corpus.src[i]);
    references.push_back(sentence.reference);
    report.sentences.push_back(std::move(sentence));
  }
  const auto score_all = [&](const std::vector<std::vector<int64_t>>& targets) {
    std::vector<ForcedScore> scores;
    for (const auto& log_probs : translator.force(sources, targets, batch_size))
      scores.push_back(forced_score(log_probs, search));
    return scores;
  };
  const auto reference_scores = score_all(references);
  const auto empty_scores = score_all(std::vector<std::vector<int64_t>>(sources.size()));
  for (size_t i = 0; i < report.sentences.size(); ++i) {
    report.sentences[i].reference_score = reference_scores[i];
    report.sentences[i].empty = empty_scores[i];
  }
  for (int64_t k : beam_sizes) {
    SearchOptions options = search;
    options.beam_size = k;
    options.n_best = 1;
    std::vector<std::vector<int64_t>> outputs;
    std::vector<bool> cut;
    for (const auto& t : translator.translate(sources, options, batch_size)) {
      outputs.push_back(t.hypotheses.at(0).tokens);
      cut.push_back(!t.hypotheses.at(0).finished);
    }
    const auto output_scores = score_all(outputs);
    BeamSummary beam;
    beam.beam_size = k;
    for (size_t i = 0; i < report.sentences.size(); ++i) {
      auto& sentence = report.sentences[i];
      SearchOutput out{k, outputs[i], output_scores[i], cut[i], SearchVerdict::kModelError};
      if (out.tokens == sentence.reference) out.verdict = SearchVerdict::kExact;
      else if (sentence.reference_score.score > out.model.score) out.verdict = SearchVerdict::kSearchError;
      ++beam.sentences;
      beam.exact += out.verdict == SearchVerdict::kExact;
      beam.search_errors += out.verdict == SearchVerdict::kSearchError;
      beam.model_errors += out.verdict == SearchVerdict::kModelError;
      beam.empty_beats_output += sentence.empty.score > out.model.score;
      beam.cut += out.cut;
      beam.mean_score += out.model.score;
      sentence.outputs.push_back(std::move(out));
    }
    if (beam.sentences > 0) beam.mean_score /= static_cast<double>(beam.sentences);
    report.beams.push_back(beam);
  }
  return report;
}

}  // namespace nlpzoo
