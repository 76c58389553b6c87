// nlpzoo embed eval: the intrinsic evaluations of word vectors (Google analogies, WordSim-353-style
// similarity); the scores are infer/embedding_eval.h's.
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

#include "core/io.h"
#include "infer/embedding_eval.h"
#include "infer/embedding_queries.h"
#include "tools/command.h"
#include "tools/embed_flags.h"
#include "tools/options.h"

namespace nlpzoo::cli {
namespace {

nlohmann::json score_json(const AnalogyScore& s) {
  return {{"name", s.name},         {"questions", s.questions},  {"seen", s.seen},
          {"correct", s.correct},   {"accuracy", s.accuracy()},  {"coverage", s.coverage()}};
}

int run_eval(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  const AnalogyEvalOptions ad;
  const SimilarityOptions sd;
  desc.add_options()
      ("analogy", po::value<std::string>(),
       "analogy questions in the Google format (': section' lines, then 'a b c d' lines), e.g. "
       "questions-words.txt: accuracy per section, semantic/syntactic and total, and coverage")
      ("similarity", po::value<std::string>(),
       "word pairs 'w1<TAB>w2<TAB>score' ('#' lines skipped), e.g. wordsim353.tsv: Spearman rho, "
       "Pearson r and the out-of-vocabulary ratio")
      ("method", po::value<std::string>()->default_value("add"), "analogy answers: add (3CosAdd) or mul (3CosMul)")
      ("analogy-restrict", po::value<int64_t>()->default_value(ad.restrict_vocab),
       "only the first N rows (most frequent words) answer or are asked about, as gensim's "
       "evaluate_word_analogies(restrict_vocab=30000) and word2vec.c's compute-accuracy (gensim's own "
       "default is 300000, which scores lower); 0 = every word")
      ("similarity-restrict", po::value<int64_t>()->default_value(sd.restrict_vocab),
       "pairs count only when both words are among the first N rows, as gensim's "
       "evaluate_word_pairs(restrict_vocab=300000); 0 = every word")
      ("case-sensitive", po::bool_switch(),
       "match words exactly (default: fold questions and vocabulary to lowercase, the most frequent "
       "case variant standing for a word, as gensim's case_insensitive=True)")
      ("batch", po::value<int64_t>()->default_value(ad.batch),
       "analogy questions scored by one matrix product (memory: batch * restrict * 4 bytes; "
       "lowered automatically to stay under 128 MiB)")
      ("json", po::value<std::string>(), "also write the scores as JSON to this file (atomically)");
  auto vm = parse_args(args, desc, "embed eval --vectors FILE [--analogy FILE] [--similarity FILE] [--json OUT]\n\n"
                                   "A question or pair with a word outside the vocabulary is not covered (gensim's\n"
                                   "convention), also for subword runs that could make vectors for such words.");
  if (!vm) return 0;
  if (!vm->count("analogy") && !vm->count("similarity"))
    throw UserError("nothing to evaluate: give --analogy FILE and/or --similarity FILE");
  AnalogyEvalOptions ao;
  ao.method = parse_analogy_method((*vm)["method"].as<std::string>());
  ao.restrict_vocab = restrict_flag(*vm, "analogy-restrict");
  ao.case_insensitive = !(*vm)["case-sensitive"].as<bool>();
  ao.batch = (*vm)["batch"].as<int64_t>();
  if (ao.batch < 1) throw UserError("--batch: must be at least 1");
  SimilarityOptions so;
  so.restrict_vocab = restrict_flag(*vm, "similarity-restrict");
  so.case_insensitive = ao.case_insensitive;
  // Read the (small) evaluation files first, so a malformed line is reported before the slow load.
  std::vector<AnalogySection> sections;
  std::vector<WordPair> pairs;
  if (vm->count("analogy")) {
    require_file((*vm)["analogy"].as<std::string>(), "--analogy: questions as questions-words.txt");
    sections = read_analogy_questions((*vm)["analogy"].as<std::string>());
  }
  if (vm->count("similarity")) {
    require_file((*vm)["similarity"].as<std::string>(), "--similarity: word pairs as wordsim353.tsv");
    pairs = read_word_pairs((*vm)["similarity"].as<std::string>());
  }
  const auto vectors = vectors_from_flags(*vm);

  nlohmann::json out;
  if (vm->count("vectors")) out["vectors"] = (*vm)["vectors"].as<std::string>();
  if (vm->count("run-dir")) out["run_dir"] = (*vm)["run-dir"].as<std::string>();
  out["words"] = vectors.size();
  out["dim"] = vectors.dim();
  out["case_insensitive"] = ao.case_insensitive;
  if (!sections.empty()) {
    const auto report = evaluate_analogies(vectors, sections, ao);
    std::cout << report.table() << "\n";
    nlohmann::json a = {{"file", (*vm)["analogy"].as<std::string>()},
                        {"method", analogy_method_name(ao.method)},
                        {"restrict_vocab", ao.restrict_vocab},
                        {"sections", nlohmann::json::array()},
                        {"semantic", score_json(report.semantic)},
                        {"syntactic", score_json(report.syntactic)},
                        {"total", score_json(report.total)}};
    for (const auto& s : report.sections) a["sections"].push_back(score_json(s));
    out["analogy"] = a;
  }
  if (!pairs.empty()) {
    const auto report = evaluate_word_pairs(vectors, pairs, so);
    std::cout << report.table();
    // NaN (fewer than two pairs seen) becomes null in the JSON.
    const auto number = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
    out["similarity"] = {{"file", (*vm)["similarity"].as<std::string>()},
                         {"restrict_vocab", so.restrict_vocab},
                         {"pairs", report.pairs},
                         {"seen", report.seen},
                         {"oov_ratio", report.oov_ratio()},
                         {"spearman", number(report.spearman)},
                         {"pearson", number(report.pearson)}};
  }
  std::cout << std::flush;
  if (vm->count("json")) atomic_write_text((*vm)["json"].as<std::string>(), out.dump(2) + "\n");
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(embed_eval, "embed eval",
                        "word-vector accuracy on analogies and Spearman rho on word-pair similarity", run_eval);

}  // namespace nlpzoo::cli
