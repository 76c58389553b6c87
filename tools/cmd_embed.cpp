// nlpzoo embed ...: using word vectors. Nearest neighbours and analogies (3CosAdd, 3CosMul),
// conversion between the word2vec formats and hard debiasing (Bolukbasi et al. 2016) here; the
// intrinsic evaluations in cmd_embed_eval.cpp, 2-D pictures in cmd_embed_plot.cpp, the flags they
// share in embed_flags.h. The math lives in infer/; these files only wire flags.
#include <algorithm>
#include <iostream>

#include "core/io.h"
#include "datasets/word_vectors.h"
#include "infer/debias.h"
#include "infer/embedding_queries.h"
#include "tools/command.h"
#include "tools/embed_flags.h"
#include "tools/options.h"

namespace nlpzoo::cli {
namespace {

void print_scored(const std::vector<ScoredWord>& words, const std::string& score_name) {
  size_t width = 4;
  for (const auto& w : words) width = std::max(width, w.word.size());
  std::cout << "rank  " << "word" << std::string(width - 4 + 2, ' ') << score_name << "\n";
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string rank = std::to_string(i + 1);
    std::cout << rank << std::string(6 - std::min<size_t>(rank.size(), 5), ' ') << words[i].word
              << std::string(width - words[i].word.size() + 2, ' ') << fixed(words[i].score, 4) << "\n";
  }
  std::cout << std::flush;
}

int run_similar(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  desc.add_options()
      ("word", po::value<std::string>(), "the query word (also the first positional argument)")
      ("count,k", po::value<int64_t>()->default_value(10), "neighbours to print")
      ("restrict", po::value<int64_t>()->default_value(0),
       "only the first N rows (the most frequent words) may be neighbours; 0 = every word");
  auto vm = parse_args(args, desc, "embed similar WORD --vectors FILE [-k 10] [--restrict N]\n\n"
                                   "The k words of largest cosine similarity to WORD (WORD itself excluded). With --run-dir of a\n"
                                   "subword model (word2vec with maxn > 0), a WORD outside the vocabulary is answered from its\n"
                                   "character n-grams; the neighbours are vocabulary words.",
                       {"word"});
  if (!vm) return 0;
  if (!vm->count("word")) throw UserError("a query WORD is required (nlpzoo embed similar WORD --vectors FILE)");
  OovVectors oov;
  const auto vectors = vectors_from_flags(*vm, &oov);
  const auto word = (*vm)["word"].as<std::string>();
  query_vector(vectors, word, oov, vectors_name(*vm));  // an unknown word is reported with the source's name
  print_scored(nearest_neighbours(vectors, word, (*vm)["count"].as<int64_t>(), restrict_flag(*vm, "restrict"), oov),
               "cosine");
  return 0;
}

int run_analogy(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  desc.add_options()
      ("words", po::value<std::vector<std::string>>(), "A B C: answer A:B :: C:? (positional)")
      ("count,k", po::value<int64_t>()->default_value(10), "answers to print")
      ("method", po::value<std::string>()->default_value("add"),
       "add: 3CosAdd, argmax cos(d, b - a + c) on unit vectors (Mikolov et al. 2013); "
       "mul: 3CosMul, argmax cos'(d,b) cos'(d,c) / (cos'(d,a) + 0.001) with cos' = (cos+1)/2 "
       "(Levy & Goldberg 2014)")
      ("restrict", po::value<int64_t>()->default_value(0),
       "only the first N rows (the most frequent words) may answer; 0 = every word");
  auto vm = parse_args(args, desc, "embed analogy A B C --vectors FILE [-k 10] [--method add|mul]\n\n"
                                   "Answers A:B :: C:? (man woman king -> queen); A, B and C are never answers. With --run-dir\n"
                                   "of a subword model, A, B and C may be outside the vocabulary (their n-grams' vectors).",
                       {"words"});
  if (!vm) return 0;
  const auto words = vm->count("words") ? (*vm)["words"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (words.size() != 3)
    throw UserError("expected three words A B C (for A:B :: C:?), got " + std::to_string(words.size()));
  const auto method = parse_analogy_method((*vm)["method"].as<std::string>());
  OovVectors oov;
  const auto vectors = vectors_from_flags(*vm, &oov);
  for (const auto& w : words) query_vector(vectors, w, oov, vectors_name(*vm));
  std::cout << words[0] << " : " << words[1] << " :: " << words[2] << " : ?   (" << analogy_method_name(method)
            << ")\n";
  print_scored(analogy(vectors, words[0], words[1], words[2], (*vm)["count"].as<int64_t>(), method,
                       restrict_flag(*vm, "restrict"), oov),
               method == AnalogyMethod::kAdd ? "cosine" : "3CosMul");
  return 0;
}

int run_export(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  desc.add_options()
      ("format", po::value<std::string>()->default_value("text"),
       "text (a line 'word v1 ... vD' per word) or binary (word2vec.c's float32 records)")
      ("out", po::value<std::string>(), "file to write (atomically; required)");
  auto vm = parse_args(args, desc, "embed export --vectors IN --format text|binary --out FILE");
  if (!vm) return 0;
  if (!vm->count("out")) throw UserError("--out FILE is required");
  const bool binary = parse_format((*vm)["format"].as<std::string>());
  const auto vectors = vectors_from_flags(*vm);
  const auto out = (*vm)["out"].as<std::string>();
  write_word_vectors(out, vectors, binary);
  std::cout << "wrote " << out << " (" << vectors.size() << " words, dimension " << vectors.dim() << ", "
            << (binary ? "binary" : "text") << ")" << std::endl;
  return 0;
}

int run_debias(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  desc.add_options()
      ("out", po::value<std::string>(), "debiased vectors to write (atomically; required); every row has length 1")
      ("format", po::value<std::string>()->default_value("text"), "of --out: text or binary")
      ("direction", po::value<std::string>()->default_value("pca"),
       "bias direction g: pca = first principal component of the definitional pairs' members "
       "centred on each pair's mean (Bolukbasi et al. 2016); mean = normalised mean of the "
       "pair differences a - b")
      ("definitional", po::value<std::string>(),
       "pairs defining g, 'a b' per line or a JSON list of pairs (default: Bolukbasi et al.'s 9: "
       "woman/man, girl/boy, she/he, mother/father, daughter/son, female/male, her/his, "
       "herself/himself, Mary/John)")
      ("equalize", po::value<std::string>(),
       "pairs made equidistant from every neutral word, tried in lower/Title/UPPER case (default: "
       "Bolukbasi et al.'s 52 equalize_pairs.json, e.g. grandfather/grandmother, king/queen)")
      ("gender-specific", po::value<std::string>(),
       "words left as they are, one or more per line or a JSON list; every other word is neutralized "
       "(default: Bolukbasi et al.'s 218-word gender_specific_seed.json, in lower/Title/UPPER case)")
      ("neutral", po::value<std::string>(),
       "neutralize exactly these words (one or more per line or a JSON list) instead of every word "
       "outside --gender-specific");
  auto vm = parse_args(args, desc, "embed debias --vectors IN --out OUT [--format text|binary] [--direction pca|mean]\n"
                                   "       [--definitional FILE] [--equalize FILE] [--gender-specific FILE | --neutral FILE]\n\n"
                                   "Hard debiasing (Bolukbasi et al. 2016, section 5): neutralize, then equalize.");
  if (!vm) return 0;
  if (!vm->count("out")) throw UserError("--out FILE is required");
  if (vm->count("gender-specific") && vm->count("neutral"))
    throw UserError("--gender-specific and --neutral: give only one (--neutral names the words to neutralize, "
                    "--gender-specific the words to keep)");
  const bool binary = parse_format((*vm)["format"].as<std::string>());
  DebiasOptions o;
  o.method = parse_bias_direction_method((*vm)["direction"].as<std::string>());
  if (vm->count("definitional")) o.definitional = read_word_pair_list((*vm)["definitional"].as<std::string>());
  if (vm->count("equalize")) o.equalize = read_word_pair_list((*vm)["equalize"].as<std::string>());
  if (vm->count("gender-specific")) o.gender_specific = read_word_list((*vm)["gender-specific"].as<std::string>());
  if (vm->count("neutral")) o.neutral = read_word_list((*vm)["neutral"].as<std::string>());
  const auto vectors = vectors_from_flags(*vm);
  DebiasReport report;
  const auto debiased = hard_debias(vectors, o, &report);
  const auto out = (*vm)["out"].as<std::string>();
  write_word_vectors(out, debiased, binary);
  std::cout << "bias direction from " << report.definitional_used << " definitional pairs";
  if (!report.definitional_missing.empty()) {
    std::cout << " (not in the vocabulary:";
    for (const auto& p : report.definitional_missing) std::cout << " " << p;
    std::cout << ")";
  }
  std::cout << "\nneutralized " << report.neutralized << " of " << vectors.size() << " words, equalized "
            << report.equalized << " pairs\nwrote " << out << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(embed_similar, "embed similar", "nearest neighbours of a word by cosine similarity",
                        run_similar);
NLPZOO_REGISTER_COMMAND(embed_analogy, "embed analogy", "answer A:B :: C:? with 3CosAdd or 3CosMul", run_analogy);
NLPZOO_REGISTER_COMMAND(embed_export, "embed export", "convert word vectors between word2vec text and binary",
                        run_export);
NLPZOO_REGISTER_COMMAND(embed_debias, "embed debias", "hard-debias word vectors (Bolukbasi et al. 2016)",
                        run_debias);

}  // namespace nlpzoo::cli
