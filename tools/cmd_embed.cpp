// nlpzoo embed ...: using word vectors. Nearest neighbours and analogies (3CosAdd, 3CosMul),
// the intrinsic evaluations (Google analogies, WordSim-353-style similarity), conversion
// between the word2vec formats, hard debiasing (Bolukbasi et al. 2016) and 2-D pictures
// (PCA, t-SNE). The math lives in infer/; this file only wires flags.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "core/io.h"
#include "datasets/word_vectors.h"
#include "infer/debias.h"
#include "infer/embedding_eval.h"
#include "infer/embedding_queries.h"
#include "infer/projection.h"
#include "infer/scatter_plot.h"
#include "tools/command.h"
#include "tools/options.h"
#include "train/tasks/registry.h"
#include "train/tasks/word_vector_source.h"

namespace nlpzoo::cli {
namespace {

// ---------------------------------------------------------------------------------------------
// THE SEAM: where every `embed` subcommand obtains its word vectors: from a word2vec file
// (--vectors) or from a trained run whose task is a WordVectorSource (--run-dir), and nowhere
// else. Queries (similar, analogy) may also ask the run for words outside its table
// (WordVectorSource::oov_vector, e.g. a subword model's n-grams); evaluations never do (gensim's
// convention: a question with an unknown word is not covered).

void add_vector_flags(po::options_description& desc) {
  desc.add_options()
      ("vectors", po::value<std::string>(),
       "word vectors in word2vec text or binary format (detected from the bytes), e.g. a .vec "
       "file; rows are taken to be listed by descending frequency, as word2vec writes them")
      ("run-dir", po::value<std::string>(),
       "instead of --vectors: the run folder of a trained word-vector model (a task that offers "
       "word vectors, e.g. word2vec)")
      ("checkpoint", po::value<std::string>()->default_value("last"),
       "with --run-dir: last (the vectors at the end of training, what word2vec.c, gensim and glove.c "
       "output) or best (lowest held-out loss, which for GloVe bottoms out epochs before the vectors are best)");
}

/// `oov`, when given, receives the run's vectors for words outside the table (left empty for
/// --vectors files and for runs that cannot make them).
WordVectors vectors_from_flags(const po::variables_map& vm, OovVectors* oov = nullptr) {
  const bool file = vm.count("vectors") > 0, run = vm.count("run-dir") > 0;
  if (file && run) throw UserError("--vectors and --run-dir: give only one source of word vectors");
  if (file) return read_word_vectors(vm["vectors"].as<std::string>());
  if (!run) throw UserError("--vectors FILE (word2vec text or binary) or --run-dir RUN is required");
  const auto run_dir = vm["run-dir"].as<std::string>();
  auto loaded = load_run(checkpoint_in(run_dir, vm["checkpoint"].as<std::string>()), torch::kCPU);
  const auto* source = loaded.task->word_vector_source();
  if (source == nullptr)
    throw UserError("--run-dir " + run_dir + ": this run trains task '" + loaded.header.task +
                    "', which has no word vectors (train a word-vector model, or pass --vectors FILE)");
  if (oov != nullptr) {
    std::shared_ptr<Task> task = std::move(loaded.task);  // kept alive by the lookup
    *oov = [task, source](const std::string& word) { return source->oov_vector(word); };
  }
  return source->word_vectors();
}

std::string vectors_name(const po::variables_map& vm) {
  if (vm.count("vectors")) return "--vectors " + vm["vectors"].as<std::string>();
  return vm.count("run-dir") ? "--run-dir " + vm["run-dir"].as<std::string>() : "the vectors";
}

// ---------------------------------------------------------------------------------------------

int64_t restrict_flag(const po::variables_map& vm, const std::string& name) {
  const int64_t n = vm[name].as<int64_t>();
  if (n < 0) throw UserError("--" + name + ": must be >= 0 (0 = every word), got " + std::to_string(n));
  return n;
}

bool parse_format(const std::string& format) {  // true = binary
  if (format == "text") return false;
  if (format == "binary") return true;
  throw UserError("--format " + format + ": expected text or binary");
}

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

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

int run_plot(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_vector_flags(desc);
  const TsneOptions td;
  const ScatterPlotOptions pd;
  desc.add_options()
      ("words", po::value<std::string>(), "words to plot, one or more per line ('#' lines skipped)")
      ("top", po::value<int64_t>(), "plot the first N rows (the most frequent words) instead of --words")
      ("method", po::value<std::string>()->default_value("pca"),
       "pca: the two principal axes (SVD of the centred vectors); tsne: t-SNE (van der Maaten & "
       "Hinton 2008), exact, O(N^2) per step: fine up to a few thousand words")
      ("out", po::value<std::string>(), "PNG file to write (atomically; required)")
      ("perplexity", po::value<double>()->default_value(td.perplexity),
       "t-SNE: effective number of neighbours; must be below the number of words - 1")
      ("iterations", po::value<int64_t>()->default_value(td.iterations), "t-SNE: gradient steps")
      ("learning-rate", po::value<double>()->default_value(td.learning_rate),
       "t-SNE: step size; 0 = auto, max(words / 48, 50) (scikit-learn's default)")
      ("seed", po::value<uint64_t>()->default_value(td.seed), "t-SNE: seed of the initial points")
      ("title", po::value<std::string>(), "text above the plot (default: the method and word count)")
      ("width", po::value<int>()->default_value(pd.width), "image width in pixels")
      ("height", po::value<int>()->default_value(pd.height), "image height in pixels");
  auto vm = parse_args(args, desc, "embed plot --vectors FILE (--words FILE | --top N) [--method pca|tsne] --out FILE.png");
  if (!vm) return 0;
  if (!vm->count("out")) throw UserError("--out FILE.png is required");
  if (vm->count("words") == vm->count("top")) throw UserError("give exactly one of --words FILE and --top N");
  const auto method = (*vm)["method"].as<std::string>();
  if (method != "pca" && method != "tsne") throw UserError("--method " + method + ": expected pca or tsne");
  std::vector<std::string> wanted;
  if (vm->count("words")) wanted = read_word_list((*vm)["words"].as<std::string>());
  const auto vectors = vectors_from_flags(*vm);
  std::vector<int64_t> rows;
  if (vm->count("top")) {
    const int64_t top = (*vm)["top"].as<int64_t>();
    if (top < 2) throw UserError("--top: must be at least 2");
    for (int64_t i = 0; i < std::min(top, vectors.size()); ++i) rows.push_back(i);
  } else {
    for (const auto& w : wanted)
      rows.push_back(require_word(vectors, w, vectors_name(*vm) + "; listed in --words " +
                                                  (*vm)["words"].as<std::string>()));
  }
  if (rows.size() < 2) throw UserError("a plot needs at least 2 words (got " + std::to_string(rows.size()) + ")");
  std::vector<std::string> labels;
  for (int64_t r : rows) labels.push_back(vectors.words()[r]);
  const auto x = vectors.vectors().index_select(0, torch::tensor(rows, torch::kInt64));  // [N, D]

  ScatterPlotOptions plot_options;
  plot_options.width = (*vm)["width"].as<int>();
  plot_options.height = (*vm)["height"].as<int>();
  if (plot_options.width < 200 || plot_options.height < 150 || plot_options.width > 10000 || plot_options.height > 10000)
    throw UserError("--width/--height: the image must be between 200x150 and 10000x10000 pixels");
  torch::Tensor points;
  const auto n = static_cast<int64_t>(rows.size());
  if (method == "pca") {
    if (x.size(1) < 2) throw UserError("--method pca: the vectors need at least 2 dimensions");
    const auto p = pca(x, 2);
    points = p.points;
    plot_options.x_label = "PC1 (" + fixed(100 * p.explained_variance_ratio[0].item<double>(), 1) + "% of variance)";
    plot_options.y_label = "PC2 (" + fixed(100 * p.explained_variance_ratio[1].item<double>(), 1) + "% of variance)";
  } else {
    TsneOptions t;
    t.perplexity = (*vm)["perplexity"].as<double>();
    t.iterations = (*vm)["iterations"].as<int64_t>();
    t.learning_rate = (*vm)["learning-rate"].as<double>();
    t.seed = (*vm)["seed"].as<uint64_t>();
    if (!(t.perplexity > 0) || t.perplexity >= n - 1)
      throw UserError("--perplexity " + fixed(t.perplexity, 1) + ": must be above 0 and below the number of words - 1 (" +
                      std::to_string(n - 1) + ")");
    if (t.iterations < 0) throw UserError("--iterations: must be >= 0");
    if (!(t.learning_rate >= 0)) throw UserError("--learning-rate: must be >= 0 (0 = auto)");
    points = tsne(x, t);
    plot_options.x_label = "t-SNE 1";
    plot_options.y_label = "t-SNE 2";
  }
  plot_options.title = vm->count("title") ? (*vm)["title"].as<std::string>()
                                 : (method == "pca" ? "PCA of " : "t-SNE of ") + std::to_string(n) + " word vectors";
  const auto out = (*vm)["out"].as<std::string>();
  plot_scatter_png(out, points, labels, plot_options);
  std::cout << "wrote " << out << " (" << n << " words, " << method << ")" << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(embed_similar, "embed similar", "nearest neighbours of a word by cosine similarity",
                        run_similar);
NLPZOO_REGISTER_COMMAND(embed_analogy, "embed analogy", "answer A:B :: C:? with 3CosAdd or 3CosMul", run_analogy);
NLPZOO_REGISTER_COMMAND(embed_eval, "embed eval",
                        "word-vector accuracy on analogies and Spearman rho on word-pair similarity", run_eval);
NLPZOO_REGISTER_COMMAND(embed_export, "embed export", "convert word vectors between word2vec text and binary",
                        run_export);
NLPZOO_REGISTER_COMMAND(embed_debias, "embed debias", "hard-debias word vectors (Bolukbasi et al. 2016)",
                        run_debias);
NLPZOO_REGISTER_COMMAND(embed_plot, "embed plot", "2-D picture of word vectors (PCA or t-SNE) as PNG", run_plot);

}  // namespace nlpzoo::cli
