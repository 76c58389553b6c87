// Using word vectors: cosine neighbours, analogies (3CosAdd vs 3CosMul), the analogy and
// word-pair evaluations, hard debiasing, PCA / t-SNE and the scatter plot, all on hand-made
// vectors with known answers.
#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/io.h"
#include "datasets/word_vectors.h"
#include "infer/debias.h"
#include "infer/embedding_eval.h"
#include "core/statistics.h"
#include "infer/embedding_queries.h"
#include "infer/projection.h"
#include "infer/scatter_plot.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace nlpzoo {
namespace {

WordVectors make_vectors(const std::vector<std::pair<std::string, std::vector<float>>>& rows) {
  std::vector<std::string> words;
  std::vector<float> flat;
  for (const auto& [w, v] : rows) {
    words.push_back(w);
    flat.insert(flat.end(), v.begin(), v.end());
  }
  const int64_t D = static_cast<int64_t>(rows.at(0).second.size());
  return WordVectors(words, torch::tensor(flat, torch::kFloat32).view({static_cast<int64_t>(rows.size()), D}));
}

std::vector<std::string> words_of(const std::vector<ScoredWord>& found) {
  std::vector<std::string> out;
  for (const auto& f : found) out.push_back(f.word);
  return out;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

class Embed : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_temp_dir("embed"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------
// Queries

// 2-D vectors at known angles and very different lengths: cosine ranks by angle only.
TEST(EmbedQueries, NearestNeighboursRankByCosineAndExcludeTheWord) {
  const auto deg = [](double a, double r) {
    return std::vector<float>{static_cast<float>(r * std::cos(a * M_PI / 180)), static_cast<float>(r * std::sin(a * M_PI / 180))};
  };
  const auto wv = make_vectors({{"a", deg(0, 1)}, {"b", deg(10, 0.1)}, {"c", deg(30, 50)}, {"d", deg(90, 2)},
                                {"e", deg(180, 1)}});
  const auto found = nearest_neighbours(wv, "a", 3);
  EXPECT_EQ(words_of(found), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_NEAR(found[0].score, std::cos(10 * M_PI / 180), 1e-6);
  EXPECT_NEAR(found[1].score, std::cos(30 * M_PI / 180), 1e-6);
  EXPECT_NEAR(found[2].score, 0, 1e-6);
  // k larger than the vocabulary: every other word, the query still excluded.
  EXPECT_EQ(nearest_neighbours(wv, "a", 10).size(), 4u);
  // restrict_vocab: only the first 3 rows compete.
  EXPECT_EQ(words_of(nearest_neighbours(wv, "e", 5, 3)), (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_NE(test::user_error_of([&] { nearest_neighbours(wv, "zebra", 3); }).find("'zebra'"), std::string::npos);
  EXPECT_NE(test::user_error_of([&] { nearest_neighbours(wv, "a", 0); }).find("-k"), std::string::npos);
}

// royal x gender axes: woman − man + king lands on queen; man, woman and king are excluded
// even though woman is closer to the 3CosAdd target than anything but queen.
TEST(EmbedQueries, AnalogyManWomanKingIsQueen) {
  const auto wv = make_vectors({{"man", {0, 1, 0}},
                                {"woman", {0, -1, 0}},
                                {"king", {1, 1, 0}},
                                {"queen", {1, -1, 0}},
                                {"apple", {0, 0, 1}},
                                {"prince", {1, 0.8f, 0.3f}}});
  for (auto method : {AnalogyMethod::kAdd, AnalogyMethod::kMul}) {
    const auto found = analogy(wv, "man", "woman", "king", 3, method);
    ASSERT_EQ(found.size(), 3u);
    EXPECT_EQ(found[0].word, "queen") << analogy_method_name(method);
    for (const auto& f : found)
      EXPECT_TRUE(f.word != "man" && f.word != "woman" && f.word != "king") << f.word;
  }
  // 3CosAdd's score: with s = 1/√2, q = woman^ − man^ + king^ = (s, s − 2, 0) and
  // queen^ = (s, −s, 0), so cos(queen, q) = (s² − s(s − 2)) / |q| = 2s / |q|.
  const double s = 1 / std::sqrt(2.0);
  const double expected = 2 * s / std::sqrt(s * s + (s - 2) * (s - 2));
  EXPECT_NEAR(analogy(wv, "man", "woman", "king", 1, AnalogyMethod::kAdd)[0].score, expected, 1e-6);
  EXPECT_NE(test::user_error_of([&] { analogy(wv, "man", "woman", "emperor", 1, AnalogyMethod::kAdd); })
                .find("'emperor'"),
            std::string::npos);
}

// Levy & Goldberg's point: 3CosAdd lets one large similarity win, 3CosMul rewards balance. For
// a:b :: c:? below, x is best by 3CosAdd (0.770 vs 0.474), but y is best by 3CosMul (2.50 vs 0.18)
// because cos(y, a) is close to −1, i.e. y is far from a. Values computed by hand (numpy).
TEST(EmbedQueries, ThreeCosAddAndThreeCosMulDisagreeWhereExpected) {
  const auto wv = make_vectors({{"a", {-0.3f, -0.7f}},
                                {"b", {-1.1f, -0.4f}},
                                {"c", {0.5f, -0.2f}},
                                {"x", {1.0f, -0.2f}},
                                {"y", {0.0f, 1.5f}},
                                {"z", {0.5f, -0.5f}}});
  const auto add = analogy(wv, "a", "b", "c", 3, AnalogyMethod::kAdd);
  const auto mul = analogy(wv, "a", "b", "c", 3, AnalogyMethod::kMul);
  EXPECT_EQ(words_of(add), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(words_of(mul), (std::vector<std::string>{"y", "z", "x"}));
  EXPECT_NEAR(add[0].score, 0.7704013948691667, 1e-5);
  EXPECT_NEAR(add[1].score, 0.4740900542092171, 1e-5);
  EXPECT_NEAR(mul[0].score, 2.4970526691909325, 1e-4);
  EXPECT_NEAR(mul[2].score, 0.18123606450279273, 1e-5);
  EXPECT_EQ(parse_analogy_method("3CosMul"), AnalogyMethod::kMul);
  EXPECT_NE(test::user_error_of([] { parse_analogy_method("sum"); }).find("--method sum"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Analogy evaluation

// Orthogonal "meaning" axes: capital = country + CAP, comparative = adjective + COMP, so every
// well-posed question has one clear answer (cosine 0.92-0.96 vs <= 0.4 for the rest). Rows are
// in "frequency" order; "Germany" (row 12), tall/taller (13, 14) and "Berlin" (15) lie beyond
// restrict 12.
WordVectors analogy_vectors() {
  const int64_t D = 10;
  const auto e = [&](std::initializer_list<int> axes) {
    std::vector<float> v(D, 0);
    for (int a : axes) v[a] = 1;
    return v;
  };
  enum { FR, DE, IT, ES, CAP, BIG, SMALL, TALL, COMP, OTHER };
  return make_vectors({{"france", e({FR})},        {"germany", e({DE})},      {"italy", e({IT})},
                       {"spain", e({ES})},         {"paris", e({FR, CAP})},   {"berlin", e({DE, CAP})},
                       {"rome", e({IT, CAP})},     {"madrid", e({ES, CAP})},  {"big", e({BIG})},
                       {"bigger", e({BIG, COMP})}, {"small", e({SMALL})},     {"smaller", e({SMALL, COMP})},
                       {"Germany", e({OTHER})},    {"tall", e({TALL})},       {"taller", e({TALL, COMP})},
                       // A case variant of "berlin" nearer than germany to paris:france :: berlin:?
                       // (cosine 0.958 vs 0.924): it must be excluded with berlin.
                       {"Berlin", {0.1f, 1, 0, 0, 0, 0, 0, 0, 0, 0}}});
}

const char* kAnalogyFile =
    ": capital-cities\n"
    "paris france berlin germany\n"
    "berlin germany rome italy\n"
    "rome italy madrid spain\n"
    "Paris France Madrid Spain\n"   // right only when case is folded
    "paris france rome spain\n"     // wrong on purpose: the answer is italy
    "paris france london england\n" // never seen: london, england not in the vocabulary
    "\n"
    ": gram-comparative\n"
    "big bigger small smaller\n"
    "small smaller big bigger\n"
    "big bigger tall taller\n";     // seen only without the restriction to 12 rows

TEST_F(Embed, AnalogyEvalCountsSectionsAccuracyAndCoverage) {
  const auto path = (dir_ / "q.txt").string();
  write(path, kAnalogyFile);
  const auto sections = read_analogy_questions(path);
  ASSERT_EQ(sections.size(), 2u);
  EXPECT_EQ(sections[0].name, "capital-cities");
  EXPECT_EQ(sections[1].questions.at(2).line, 12);

  const auto wv = analogy_vectors();
  AnalogyEvalOptions o;
  o.restrict_vocab = 12;
  o.batch = 2;  // several batches per section, and a last partial one
  auto r = evaluate_analogies(wv, sections, o);
  ASSERT_EQ(r.sections.size(), 2u);
  EXPECT_EQ(r.sections[0].questions, 6);
  EXPECT_EQ(r.sections[0].seen, 5);
  EXPECT_EQ(r.sections[0].correct, 4);
  EXPECT_EQ(r.sections[1].questions, 3);
  EXPECT_EQ(r.sections[1].seen, 2);
  EXPECT_EQ(r.sections[1].correct, 2);
  EXPECT_EQ(r.semantic.correct, 4);
  EXPECT_EQ(r.syntactic.seen, 2);
  EXPECT_EQ(r.total.questions, 9);
  EXPECT_EQ(r.total.seen, 7);
  EXPECT_EQ(r.total.correct, 6);
  EXPECT_DOUBLE_EQ(r.total.accuracy(), 6.0 / 7);
  EXPECT_DOUBLE_EQ(r.total.coverage(), 7.0 / 9);
  EXPECT_NE(r.table().find("capital-cities"), std::string::npos);
  EXPECT_NE(r.table().find("85.71"), std::string::npos) << r.table();  // 6/7

  // Every row allowed: tall/taller join; the capitalised "Germany" (row 12) does not replace
  // the more frequent "germany" (row 1), so the answers stay right.
  o.restrict_vocab = 0;
  r = evaluate_analogies(wv, sections, o);
  EXPECT_EQ(r.total.seen, 8);
  EXPECT_EQ(r.total.correct, 7);
  EXPECT_EQ(r.sections[1].correct, 3);
  // 3CosMul agrees on these clear-cut questions.
  o.method = AnalogyMethod::kMul;
  EXPECT_EQ(evaluate_analogies(wv, sections, o).total.correct, 7);

  // Case-sensitive: "Paris France Madrid Spain" is not in the vocabulary any more, and
  // "Berlin", now a word of its own, wrongly answers paris:france :: berlin:?.
  o.method = AnalogyMethod::kAdd;
  o.case_insensitive = false;
  r = evaluate_analogies(wv, sections, o);
  EXPECT_EQ(r.sections[0].seen, 4);
  EXPECT_EQ(r.sections[0].correct, 2);
}

TEST_F(Embed, MalformedAnalogyLinesNameFileAndLine) {
  const auto path = (dir_ / "bad.txt").string();
  write(path, "paris france berlin germany\n");
  auto err = test::user_error_of([&] { read_analogy_questions(path); });
  EXPECT_NE(err.find(path + ":1:"), std::string::npos) << err;
  EXPECT_NE(err.find("section"), std::string::npos) << err;
  write(path, ": s\nparis france berlin germany\nparis france berlin\n");
  err = test::user_error_of([&] { read_analogy_questions(path); });
  EXPECT_NE(err.find(path + ":3:"), std::string::npos) << err;
  EXPECT_NE(err.find("found 3"), std::string::npos) << err;
  write(path, ": s\n:\n");
  EXPECT_NE(test::user_error_of([&] { read_analogy_questions(path); }).find(path + ":2:"), std::string::npos);
  write(path, ": only a section\n");
  EXPECT_NE(test::user_error_of([&] { read_analogy_questions(path); }).find("no analogy questions"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Word-pair similarity

TEST(EmbedSimilarity, SpearmanAveragesTiedRanks) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({3, 1, 3, 3}), (std::vector<double>{3, 1, 3, 3}));
  // By hand: ranks x = (1, 2.5, 2.5, 4), y = (1, 3, 2, 4); deviations from 2.5 give
  // Σdx·dy = 4.5, Σdx² = 4.5, Σdy² = 5, so ρ = 4.5 / √22.5 = 3/√10.
  EXPECT_NEAR(spearman_rho({1, 2, 2, 3}, {1, 3, 2, 4}), 3 / std::sqrt(10.0), 1e-12);
  // scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) = 0.8207826816681233 (its docs' example).
  EXPECT_NEAR(spearman_rho({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}), 0.8207826816681233, 1e-12);
  EXPECT_NEAR(spearman_rho({1, 2, 3}, {30, 20, 10}), -1, 1e-12);
  EXPECT_NEAR(pearson_r({1, 2, 3}, {2, 4, 6}), 1, 1e-12);
  EXPECT_TRUE(std::isnan(spearman_rho({1, 2, 3}, {5, 5, 5})));
  EXPECT_TRUE(std::isnan(spearman_rho({1}, {2})));
}

TEST_F(Embed, WordPairEvalScoresSeenPairsAndOovRatio) {
  const auto wv = make_vectors({{"cat", {1, 0}}, {"tiger", {0.9f, 0.1f}}, {"car", {0, 1}}, {"Dog", {0.8f, 0.3f}}});
  const auto path = (dir_ / "pairs.tsv").string();
  // cos: tiger/cat 0.994, dog/cat 0.936, cat/car 0, tiger/car 0.110; human scores agree in order
  // except for a tie; one pair is out of vocabulary.
  write(path,
        "# Word 1\tWord 2\tHuman (mean)\n"
        "tiger\tcat\t9.0\n"
        "dog\tcat\t7.5\n"
        "cat\tcar\t1.0\n"
        "tiger\tcar\t1.0\n"
        "cat\tunicorn\t3.0\n");
  const auto pairs = read_word_pairs(path);
  ASSERT_EQ(pairs.size(), 5u);
  EXPECT_EQ(pairs[0].line, 2);
  const auto r = evaluate_word_pairs(wv, pairs);
  EXPECT_EQ(r.pairs, 5);
  EXPECT_EQ(r.seen, 4);
  EXPECT_DOUBLE_EQ(r.oov_ratio(), 20.0);
  // By hand: gold ranks (4, 3, 1.5, 1.5), model ranks (4, 3, 1, 2); deviations from 2.5: gold
  // (1.5, .5, −1, −1), model (1.5, .5, −1.5, −.5): Σ products = 2.25 + .25 + 1.5 + .5 = 4.5,
  // Σ gold² = 4.5, Σ model² = 5, ρ = 4.5 / √(4.5·5).
  EXPECT_NEAR(r.spearman, 4.5 / std::sqrt(4.5 * 5), 1e-9);
  SimilarityOptions cs;
  cs.case_insensitive = false;  // "dog" is only "Dog" in the vocabulary
  EXPECT_EQ(evaluate_word_pairs(wv, pairs, cs).seen, 3);
  SimilarityOptions restricted;
  restricted.restrict_vocab = 2;  // cat and tiger only
  EXPECT_EQ(evaluate_word_pairs(wv, pairs, restricted).seen, 1);
}

TEST_F(Embed, MalformedWordPairLinesNameFileAndLine) {
  const auto path = (dir_ / "bad.tsv").string();
  write(path, "# header\ntiger\tcat\t7.35\ntiger cat 7.35\n");
  auto err = test::user_error_of([&] { read_word_pairs(path); });
  EXPECT_NE(err.find(path + ":3:"), std::string::npos) << err;
  write(path, "tiger\tcat\tseven\n");
  err = test::user_error_of([&] { read_word_pairs(path); });
  EXPECT_NE(err.find(path + ":1:"), std::string::npos) << err;
  EXPECT_NE(err.find("'seven'"), std::string::npos) << err;
  write(path, "# nothing\n");
  EXPECT_NE(test::user_error_of([&] { read_word_pairs(path); }).find("no word pairs"), std::string::npos);
}

// The real WordSim-353 file parses: 353 pairs after its two '#' lines.
TEST(EmbedSimilarity, ReadsTheSharedWordSim353) {
  const std::string path = test::shared_data("similarity/wordsim353.tsv");
  const std::string q = test::shared_data("analogy/questions-words.txt");
  NLPZOO_REQUIRE_SHARED_FILES(path, q);
  const auto pairs = read_word_pairs(path);
  ASSERT_EQ(pairs.size(), 353u);
  EXPECT_EQ(pairs[0].a, "love");
  EXPECT_DOUBLE_EQ(pairs[0].score, 6.77);
  const auto sections = read_analogy_questions(q);
  EXPECT_EQ(sections.size(), 14u);
  size_t n = 0;
  for (const auto& s : sections) n += s.questions.size();
  EXPECT_EQ(n, 19544u);
}

// ---------------------------------------------------------------------------------------------
// Debiasing

// Gender is the first axis: she/he and woman/man differ only there (same lengths), so the bias
// direction is exactly e_0, pointing to the first word of each pair.
WordVectors gendered_vectors() {
  return make_vectors({{"she", {1, 0.2f, 0.1f, 0}},
                       {"he", {-1, 0.2f, 0.1f, 0}},
                       {"woman", {0.9f, 0, 0.3f, 0.1f}},
                       {"man", {-0.9f, 0, 0.3f, 0.1f}},
                       {"nurse", {0.5f, 0.5f, 0.2f, 0.7f}},
                       {"doctor", {-0.4f, 0.6f, 0.3f, 0.6f}},
                       {"grandmother", {0.6f, 0.3f, 0.7f, 0.1f}},
                       {"grandfather", {-0.5f, 0.35f, 0.6f, 0.2f}}});
}

DebiasOptions small_debias_options() {
  DebiasOptions o;
  o.definitional = {{"she", "he"}, {"woman", "man"}};
  o.equalize = {{"grandmother", "grandfather"}};
  o.gender_specific = {"she", "he", "woman", "man", "grandmother", "grandfather"};
  return o;
}

TEST(EmbedDebias, DirectionNeutralizeAndEqualizeOnHandMadeVectors) {
  const auto wv = gendered_vectors();
  for (auto method : {BiasDirectionMethod::kPca, BiasDirectionMethod::kMeanDifference}) {
    const auto g = bias_direction(wv, small_debias_options().definitional, method);
    EXPECT_NEAR(g[0].item<float>(), 1, 1e-5);  // e_0, oriented towards "she"
    EXPECT_NEAR(g.norm().item<float>(), 1, 1e-5);
  }
  DebiasReport report;
  const auto out = hard_debias(wv, small_debias_options(), &report);
  EXPECT_EQ(report.definitional_used, 2);
  EXPECT_EQ(report.neutralized, 2);  // nurse, doctor
  EXPECT_EQ(report.equalized, 1);
  const auto& V = out.vectors();
  const auto g = report.direction;
  const auto row = [&](const char* w) { return V[out.find(w)]; };
  for (const char* w : {"nurse", "doctor"}) {
    EXPECT_NEAR(row(w).dot(g).item<float>(), 0, 1e-6) << w;  // no gender left
    EXPECT_NEAR(row(w).norm().item<float>(), 1, 1e-5) << w;
  }
  const auto gm = row("grandmother"), gf = row("grandfather");
  EXPECT_NEAR(gm.norm().item<float>(), 1, 1e-5);  // norms preserved (unit)
  EXPECT_NEAR(gf.norm().item<float>(), 1, 1e-5);
  const auto orth = [&](const torch::Tensor& v) { return v - v.dot(g) * g; };
  EXPECT_LT((orth(gm) - orth(gf)).abs().max().item<float>(), 1e-6);  // same gender-free part
  EXPECT_GT(gm.dot(g).item<float>(), 0.1);                           // each stays on its side
  EXPECT_NEAR(gm.dot(g).item<float>(), -gf.dot(g).item<float>(), 1e-6);
  for (const char* w : {"nurse", "doctor"})  // equidistant from every neutral word
    EXPECT_NEAR((gm - row(w)).norm().item<float>(), (gf - row(w)).norm().item<float>(), 1e-6) << w;
  // Before, they were not: grandmother was nearer to nurse.
  const auto U = unit_rows(wv.vectors());
  EXPECT_GT(std::abs((U[6] - U[4]).norm().item<float>() - (U[7] - U[4]).norm().item<float>()), 0.1);
  // Gender-specific words keep their (unit-normalised) vectors.
  EXPECT_LT((row("she") - U[0]).abs().max().item<float>(), 1e-6);

  // --neutral: only the listed words are neutralized.
  auto only = small_debias_options();
  only.neutral = std::vector<std::string>{"nurse"};
  const auto partial = hard_debias(wv, only, &report);
  EXPECT_EQ(report.neutralized, 1);
  EXPECT_NEAR(partial.vectors()[partial.find("nurse")].dot(g).item<float>(), 0, 1e-6);
  EXPECT_GT(std::abs(partial.vectors()[partial.find("doctor")].dot(g).item<float>()), 0.1);

  auto none = small_debias_options();
  none.definitional = {{"queen", "king"}};
  EXPECT_NE(test::user_error_of([&] { hard_debias(wv, none); }).find("definitional"), std::string::npos);
}

// "Real-ish" vectors: 600 random 40-d words, the built-in gendered words given a planted
// gender component, debiased with the built-in lists.
TEST(EmbedDebias, BuiltInListsOnRandomVectorsWithAPlantedGenderComponent) {
  torch::manual_seed(7);
  const int64_t D = 40;
  std::vector<std::string> words;
  for (const auto& [a, b] : default_equalize_pairs()) {
    words.push_back(a);
    words.push_back(b);
  }
  for (const auto& [a, b] : default_definitional_pairs()) {
    words.push_back(a);
    words.push_back(b);
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  const int64_t gendered = static_cast<int64_t>(words.size());
  for (int i = 0; words.size() < 600; ++i) words.push_back("word" + std::to_string(i));
  auto V = torch::randn({static_cast<int64_t>(words.size()), D});
  const auto gender = torch::randn({D});
  // Definitional pairs get ±2·gender (+ for the first word), the neutral words a random share
  // of it: the bias to remove.
  for (const auto& [a, b] : default_definitional_pairs()) {
    const auto ia = std::find(words.begin(), words.end(), a) - words.begin();
    const auto ib = std::find(words.begin(), words.end(), b) - words.begin();
    V[ia] += 2 * gender;
    V[ib] -= 2 * gender;
  }
  V.slice(0, gendered) += torch::rand({static_cast<int64_t>(words.size()) - gendered, 1}) * gender;
  const WordVectors wv(words, V);
  DebiasReport report;
  const auto out = hard_debias(wv, DebiasOptions{}, &report);
  EXPECT_EQ(report.definitional_used, 9);
  const auto g = report.direction;
  const auto proj = out.vectors().slice(0, gendered).matmul(g);  // neutral words
  EXPECT_LT(proj.abs().max().item<float>(), 1e-5);
  EXPECT_GT(g.dot(gender / gender.norm()).item<float>(), 0.9);  // the planted direction was found
  EXPECT_GT(report.equalized, 40);
  const auto neutral = out.vectors()[gendered + 5];
  for (const auto& [a, b] : default_equalize_pairs()) {
    const auto ea = out.vectors()[out.find(a)], eb = out.vectors()[out.find(b)];
    EXPECT_NEAR((ea - neutral).norm().item<float>(), (eb - neutral).norm().item<float>(), 1e-5) << a << "/" << b;
    EXPECT_NEAR(ea.norm().item<float>(), 1, 1e-5);
  }
}

TEST_F(Embed, WordListsReadLinesOrJson) {
  const auto p = (dir_ / "pairs.txt").string();
  write(p, "# pairs\nshe he\n\nwoman man\n");
  EXPECT_EQ(read_word_pair_list(p), (WordPairs{{"she", "he"}, {"woman", "man"}}));
  write(p, "[[\"woman\", \"man\"], [\"girl\", \"boy\"]]");
  EXPECT_EQ(read_word_pair_list(p), (WordPairs{{"woman", "man"}, {"girl", "boy"}}));
  write(p, "she he\nwoman\n");
  EXPECT_NE(test::user_error_of([&] { read_word_pair_list(p); }).find(p + ":2:"), std::string::npos);
  write(p, "[[\"woman\", \"man\", \"x\"]]");
  EXPECT_NE(test::user_error_of([&] { read_word_pair_list(p); }).find("JSON element 1"), std::string::npos);
  write(p, "nurse doctor\nengineer\n");
  EXPECT_EQ(read_word_list(p), (std::vector<std::string>{"nurse", "doctor", "engineer"}));
  write(p, "[\"a\", 3]");
  EXPECT_NE(test::user_error_of([&] { read_word_list(p); }).find("JSON element 2"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Projections and the picture

TEST(EmbedProjection, PcaOfPointsOnALineHasOneDominantAxis) {
  torch::manual_seed(0);
  const auto dir = torch::tensor({1.0f, 2.0f, -1.0f, 0.5f, 3.0f});
  const auto t = torch::linspace(-5, 5, 40).unsqueeze(1);                       // [40, 1]
  const auto x = t * dir.unsqueeze(0) + 0.01 * torch::randn({40, 5}) + 7;       // [40, 5]
  const auto p = pca(x, 2);
  EXPECT_EQ(p.points.sizes(), (std::vector<int64_t>{40, 2}));
  EXPECT_GT(p.explained_variance_ratio[0].item<float>(), 0.999);
  EXPECT_LT(p.explained_variance_ratio[1].item<float>(), 0.001);
  EXPECT_GT(std::abs(p.components[0].dot(dir / dir.norm()).item<float>()), 0.9999);
  // The first coordinate is t scaled by |dir| (up to sign), centred.
  EXPECT_GT(std::abs(torch::corrcoef(torch::stack({p.points.select(1, 0), t.squeeze(1)}))[0][1].item<float>()),
            0.9999);
  EXPECT_THROW(pca(x, 6), std::invalid_argument);
}

TEST(EmbedProjection, TsneBinarySearchReachesThePerplexity) {
  torch::manual_seed(1);
  const auto x = torch::randn({50, 4}, torch::kFloat64);
  const auto n = (x * x).sum(1, true);
  const auto d2 = (n - 2 * x.matmul(x.t()) + n.t()).clamp_min(0).fill_diagonal_(0);
  const auto P = tsne_conditional_probabilities(d2, 10);
  EXPECT_LT((P.sum(1) - 1).abs().max().item<double>(), 1e-9);
  EXPECT_EQ(P.diagonal().abs().max().item<double>(), 0);
  const auto H = -(P * torch::log(P.clamp_min(1e-300))).sum(1);  // nats
  EXPECT_LT((torch::exp(H) - 10).abs().max().item<double>(), 1e-3);
}

TEST(EmbedProjection, TsneSeparatesTwoClustersAndIsSeeded) {
  torch::manual_seed(2);
  const int64_t n = 30;
  auto a = torch::randn({n, 10});
  auto b = torch::randn({n, 10});
  b.select(1, 0) += 20;  // two well-separated Gaussian clusters
  const auto x = torch::cat({a, b});
  TsneOptions o;
  o.perplexity = 10;
  o.seed = 5;  // default 1000 steps, automatic learning rate
  const auto y = tsne(x, o);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2 * n, 2}));
  ASSERT_TRUE(torch::isfinite(y).all().item<bool>());
  const auto ya = y.slice(0, 0, n), yb = y.slice(0, n);
  const auto ca = ya.mean(0), cb = yb.mean(0);
  const double between = (ca - cb).norm().item<double>();
  const double within = std::max((ya - ca).norm(2, 1).max().item<double>(), (yb - cb).norm(2, 1).max().item<double>());
  EXPECT_GT(between, 2 * within) << "between " << between << ", widest cluster radius " << within;
  EXPECT_TRUE(torch::equal(y, tsne(x, o)));  // same seed, same picture
  o.perplexity = 59;
  EXPECT_THROW(tsne(x, o), std::invalid_argument);
}

TEST_F(Embed, ScatterPlotWritesAPngWithDotsWhereThePointsAre) {
  const std::string png = (dir_ / "plot.png").string();
  const auto points = torch::tensor({0.0f, 0.0f, 1.0f, 2.0f, -3.0f, 1.0f}).view({3, 2});
  ScatterPlotOptions o;
  o.title = "three words";
  o.x_label = "x";
  o.y_label = "y";
  plot_scatter_png(png, points, {"alpha", "beta", "gamma"}, o);
  const auto bytes = read_file(png);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  cairo_surface_t* img = cairo_image_surface_create_from_png(png.c_str());
  ASSERT_EQ(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(img), o.width);
  EXPECT_EQ(cairo_image_surface_get_height(img), o.height);
  const auto l = scatter_plot_layout(points, o);
  const auto pixel = [&](double x, double y) {
    const auto* px = reinterpret_cast<const uint32_t*>(cairo_image_surface_get_data(img) +
                                                       static_cast<int>(y) * cairo_image_surface_get_stride(img)) +
                     static_cast<int>(x);
    return *px & 0xFFFFFF;
  };
  for (int i = 0; i < 3; ++i) {  // a blue dot on each point
    const uint32_t c = pixel(l.to_px_x(points[i][0].item<double>()), l.to_px_y(points[i][1].item<double>()));
    EXPECT_GT(c & 0xFF, ((c >> 16) & 0xFF) + 60) << "point " << i << " colour " << std::hex << c;
  }
  EXPECT_EQ(pixel(l.plot_x + 5, l.plot_y + l.plot_h - 5), 0xFFFFFFu);  // an empty corner stays white
  cairo_surface_destroy(img);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // atomic: no temp left
  EXPECT_NE(test::user_error_of([&] { plot_scatter_png(png, points, {"a"}); }).find("labels"), std::string::npos);
}

}  // namespace
}  // namespace nlpzoo
