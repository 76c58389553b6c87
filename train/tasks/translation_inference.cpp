// TranslationTask's offers to the CLI: evaluate (loss, perplexity, BLEU of greedy and beam
// search), the TorchScript twin, and the TranslationModel capability.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "core/io.h"
#include "infer/bleu.h"
#include "infer/translator.h"
#include "train/evaluation.h"
#include "train/tasks/translation_task.h"

namespace nlpzoo {

namespace {

// Corpus BLEU of `translator`'s output for the split's sources against its references, as
// metric `name`; the output goes to `hyp_path` unless it is "". details: sacreBLEU's line,
// its signature, the speed and where the output went, under `label`.
Metrics bleu_metrics(const Translator& translator, const ParallelCorpus& corpus, const SearchOptions& search,
                     int64_t batch_size, const std::string& name, const std::string& label, const std::string& hyp_path) {
  const auto start = std::chrono::steady_clock::now();
  const auto results = translator.translate(corpus.src, search, batch_size);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::string> hyps;
  std::string text;
  for (const auto& r : results) {
    hyps.push_back(r.hypotheses.empty() ? "" : translator.text(r.hypotheses.front()));
    text += hyps.back() + "\n";
  }
  if (!hyp_path.empty()) atomic_write_text(hyp_path, text);
  const BleuOptions options;
  const auto bleu = corpus_bleu(hyps, {corpus.tgt}, options);
  char speed[96];
  std::snprintf(speed, sizeof speed, "%zu sentences in %.1f s (%.1f sent/s)", hyps.size(), seconds,
                hyps.size() / std::max(seconds, 1e-9));
  Metrics m;
  m.add({name, bleu.score, Better::kHigher, 2, ""});
  m.details = label + ": " + bleu.format() + "\n  " + bleu_signature(options, 1) + "\n  " + speed +
              (hyp_path.empty() ? "" : "; output in " + hyp_path) + "\n";
  return m;
}

}  // namespace

Metrics TranslationTask::evaluate(Split split, const EvaluationOptions& options) {
  auto m = loss_metrics(*this, split, options.device, "target_tokens");
  if (!options.decode) return m;
  SearchOptions search;
  if (options.search != nullptr)
    search = *options.search;
  else
    search.length_penalty = options_.length_penalty;  // the run's own, as the CLI's default is
  const Translator translator(decoder(), source_tokenizer(), target_tokenizer(), max_positions(), options.device);
  // The decoded subset (the benches' and the quickstart's bound); the loss above covers all.
  ParallelCorpus corpus = raw_split(split);
  std::string subset;
  if (options.max_decoded > 0 && options.max_decoded < static_cast<int64_t>(corpus.src.size())) {
    subset = " (first " + std::to_string(options.max_decoded) + " of " + std::to_string(corpus.src.size()) +
             " sentences)";
    corpus.src.resize(options.max_decoded);
    corpus.tgt.resize(options.max_decoded);
  }
  const auto path = [&](const std::string& what) {
    return options.output_prefix.empty() ? std::string() : options.output_prefix + "." + what + ".txt";
  };
  SearchOptions greedy = search;
  greedy.beam_size = 1;
  m.add(bleu_metrics(translator, corpus, greedy, options.batch_size, "bleu_greedy", "BLEU greedy" + subset,
                     path("greedy")));
  if (search.beam_size > 1) {
    const std::string k = std::to_string(search.beam_size);
    m.add(bleu_metrics(translator, corpus, search, options.batch_size, "bleu_beam" + k, "BLEU beam " + k + subset,
                       path("beam" + k)));
  }
  return m;
}

std::vector<std::string> TranslationTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  auto extra = artifacts();
  extra["config.ini"] = config_ini;
  model_->export_twin(path, extra);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : extra) names.push_back(name);
  return names;
}

int64_t TranslationTask::attention_heads() const {
  return model_->attention_heads();
}

void TranslationTask::set_attention_head(int64_t head) {
  if (head < -1 || head >= attention_heads())
    throw std::out_of_range("attention head " + std::to_string(head) + " is outside [-1, " +
                            std::to_string(attention_heads()) + ")");
  model_->set_attention_head(head);
}

}  // namespace nlpzoo
