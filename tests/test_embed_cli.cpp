// (Regression) nlpzoo embed end to end on a tiny vectors file: every subcommand, the JSON the
// benchmark script reads, and the errors (unknown word, malformed evaluation line, --run-dir).
// With Debian's python3-gensim, our analogy accuracy and Spearman ρ are compared with gensim's
// on the same file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/io.h"
#include "datasets/word_vectors.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::run_cli;
using test::shell_quote;

namespace {

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Capitals = country + CAP, comparatives = adjective + COMP (orthogonal axes): every question
// below has one clear answer. 10 dimensions; rows in "frequency" order.
const char* kVectors =
    "12 10\n"
    "france 1 0 0 0 0 0 0 0 0 0\n"
    "germany 0 1 0 0 0 0 0 0 0 0\n"
    "italy 0 0 1 0 0 0 0 0 0 0\n"
    "spain 0 0 0 1 0 0 0 0 0 0\n"
    "paris 1 0 0 0 1 0 0 0 0 0\n"
    "berlin 0 1 0 0 1 0 0 0 0 0\n"
    "rome 0 0 1 0 1 0 0 0 0 0\n"
    "madrid 0 0 0 1 1 0 0 0 0 0\n"
    "big 0 0 0 0 0 1 0 0 0 0\n"
    "bigger 0 0 0 0 0 1 0 0 1 0\n"
    "small 0 0 0 0 0 0 1 0 0 0\n"
    "smaller 0 0 0 0 0 0 1 0 1 0.1\n";

const char* kQuestions =
    ": capital-common-countries\n"
    "Paris France Berlin Germany\n"
    "Berlin Germany Rome Italy\n"
    "Paris France Rome Spain\n"        // wrong on purpose
    "Paris France London England\n"    // out of vocabulary
    ": gram2-opposite\n"
    "big bigger small smaller\n";

const char* kPairs =
    "# Word 1\tWord 2\tHuman (mean)\n"
    "paris\tfrance\t8.5\n"
    "big\tbigger\t7.0\n"
    "big\tsmall\t2.0\n"
    "rome\tspain\t2.0\n"
    "paris\tlondon\t6.0\n";

class RegressionEmbedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("embed_cli");
    write(root_ / "v.txt", kVectors);
    write(root_ / "q.txt", kQuestions);
    write(root_ / "pairs.tsv", kPairs);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string path(const std::string& name) const { return shell_quote((root_ / name).string()); }
  fs::path root_;
};

void expect_error(const test::CommandResult& r, const std::string& what) {
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(": error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "error should name '" << what << "': " << r.err;
}

TEST_F(RegressionEmbedCli, SimilarAnalogyEvalExportDebiasPlot) {
  auto r = run_cli("embed similar paris --vectors " + path("v.txt") + " -k 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("france"), std::string::npos) << r.out;  // cos 0.707, as berlin/rome/madrid (0.5) lose
  EXPECT_EQ(r.out.find(" paris "), std::string::npos) << r.out;

  r = run_cli("embed analogy paris france berlin --vectors " + path("v.txt") + " -k 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1     germany"), std::string::npos) << r.out;
  r = run_cli("embed analogy big bigger small --method mul --vectors " + path("v.txt") + " -k 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("smaller"), std::string::npos) << r.out;
  expect_error(run_cli("embed analogy paris france london --vectors " + path("v.txt")), "'london'");
  expect_error(run_cli("embed analogy paris france --vectors " + path("v.txt")), "three words");
  expect_error(run_cli("embed similar paris --run-dir " + path("run")), "no such checkpoint");
  expect_error(run_cli("embed similar paris --run-dir " + path("run") + " --vectors " + path("v.txt")),
               "only one source");

  r = run_cli("embed eval --vectors " + path("v.txt") + " --analogy " + path("q.txt") + " --similarity " +
              path("pairs.tsv") + " --json " + path("eval.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("capital-common-countries"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spearman"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_file((root_ / "eval.json").string()));
  EXPECT_EQ(j["analogy"]["total"]["questions"], 5);
  EXPECT_EQ(j["analogy"]["total"]["seen"], 4);
  EXPECT_EQ(j["analogy"]["total"]["correct"], 3);
  EXPECT_EQ(j["analogy"]["sections"].size(), 2u);
  EXPECT_EQ(j["analogy"]["syntactic"]["correct"], 1);
  EXPECT_EQ(j["similarity"]["seen"], 4);
  EXPECT_DOUBLE_EQ(j["similarity"]["oov_ratio"].get<double>(), 20.0);
  EXPECT_TRUE(j["similarity"]["spearman"].is_number());

  write(root_ / "bad.txt", ": s\nParis France Berlin\n");
  expect_error(run_cli("embed eval --vectors " + path("v.txt") + " --analogy " + path("bad.txt")),
               (root_ / "bad.txt").string() + ":2:");
  expect_error(run_cli("embed eval --vectors " + path("v.txt")), "--analogy");

  r = run_cli("embed export --vectors " + path("v.txt") + " --format binary --out " + path("v.bin"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto text = read_word_vectors((root_ / "v.txt").string());
  const auto binary = read_word_vectors((root_ / "v.bin").string());
  EXPECT_EQ(binary.words(), text.words());
  EXPECT_TRUE(torch::equal(binary.vectors(), text.vectors()));
  expect_error(run_cli("embed export --vectors " + path("v.bin") + " --format word --out " + path("x")), "--format");

  write(root_ / "defs.txt", "paris berlin\n");  // a "direction" on this toy set: France vs Germany
  r = run_cli("embed debias --vectors " + path("v.bin") + " --out " + path("d.txt") + " --definitional " +
              path("defs.txt") + " --neutral " + path("pairs.tsv.words"));
  expect_error(r, "pairs.tsv.words");
  write(root_ / "neutral.txt", "big bigger small smaller italy spain\n");
  r = run_cli("embed debias --vectors " + path("v.bin") + " --out " + path("d.txt") + " --definitional " +
              path("defs.txt") + " --neutral " + path("neutral.txt"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("neutralized 6 of 12"), std::string::npos) << r.out;
  EXPECT_EQ(read_word_vectors((root_ / "d.txt").string()).size(), 12);

  write(root_ / "words.txt", "paris berlin rome madrid\nfrance germany italy spain\n");
  r = run_cli("embed plot --vectors " + path("v.txt") + " --words " + path("words.txt") + " --out " + path("p.png"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file((root_ / "p.png").string()).substr(1, 3), "PNG");
  r = run_cli("embed plot --vectors " + path("v.txt") + " --top 12 --method tsne --perplexity 3 --iterations 200 --out " +
              path("t.png"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(root_ / "t.png"));
  expect_error(run_cli("embed plot --vectors " + path("v.txt") + " --top 12 --method tsne --out " + path("t.png")),
               "--perplexity");
  write(root_ / "words.txt", "paris\nnowhere\n");
  expect_error(run_cli("embed plot --vectors " + path("v.txt") + " --words " + path("words.txt") + " --out " +
                       path("p.png")),
               "'nowhere'");
}

// gensim (Debian's python3-gensim) on the same vectors: the reference numbers we mean to match.
// Vectors: every word of the shared analogy and WordSim-353 files, random, plus a planted
// "section offset" so that part of each section is answered right, written in a random
// case mix and order so that case folding and restrict_vocab both matter.
TEST_F(RegressionEmbedCli, MatchesGensimOnTheSharedEvaluationSets) {
  NLPZOO_REQUIRE_PYTHON_MODULE("gensim", "python3-gensim");
  const std::string questions = test::shared_data("analogy/questions-words.txt");
  const std::string pairs = test::shared_data("similarity/wordsim353.tsv");
  NLPZOO_REQUIRE_SHARED_FILES(questions, pairs);

  // Each word: a random base vector; the second word of every question pair adds its section's
  // offset to the first's base, so a:b :: c:d is often (not always) answerable.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 1);
  const int64_t D = 24;
  std::map<std::string, std::vector<float>> vec;
  std::vector<std::string> order;
  const auto base = [&](const std::string& w) -> std::vector<float>& {
    auto it = vec.find(w);
    if (it != vec.end()) return it->second;
    std::vector<float> v(D);
    for (auto& x : v) x = normal(rng);
    order.push_back(w);
    return vec[w] = v;
  };
  std::vector<float> offset(D);
  for (const auto& line : read_lines(questions)) {
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string s; in >> s;) w.push_back(s);
    if (w.empty()) continue;
    if (w[0] == ":") {
      for (auto& x : offset) x = 1.5f * normal(rng);
      continue;
    }
    for (int k : {0, 2}) {
      auto& first = base(w[k]);
      if (vec.count(w[k + 1]) == 0) {
        auto second = first;
        for (int64_t d = 0; d < D; ++d) second[d] += offset[d] + 0.4f * normal(rng);
        vec[w[k + 1]] = second;
        order.push_back(w[k + 1]);
      }
    }
  }
  for (const auto& line : read_lines(pairs)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string a, b;
    in >> a >> b;
    base(a);
    base(b);
  }
  // Lowercase a third of the words, add a lowercase twin (a less frequent case variant) for
  // some, and shuffle, so the restriction below cuts through the vocabulary.
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::string> words;
  std::vector<float> flat;
  std::set<std::string> seen;
  for (size_t i = 0; i < order.size(); ++i) {
    std::string w = order[i];
    if (i % 3 == 0) w = lower(w);
    if (!seen.insert(w).second) continue;
    words.push_back(w);
    flat.insert(flat.end(), vec[order[i]].begin(), vec[order[i]].end());
  }
  for (size_t i = 0; i < order.size(); i += 7) {
    const std::string low = lower(order[i]);
    if (!seen.insert(low).second) continue;
    words.push_back(low);
    for (int64_t d = 0; d < D; ++d) flat.push_back(normal(rng));
  }
  const auto n = static_cast<int64_t>(words.size());
  write_word_vectors((root_ / "g.txt").string(), WordVectors(words, torch::tensor(flat).view({n, D})), false);
  const int64_t restrict_vocab = n * 4 / 5;

  auto r = run_cli("embed eval --vectors " + path("g.txt") + " --analogy " + shell_quote(questions) +
                   " --similarity " + shell_quote(pairs) + " --analogy-restrict " + std::to_string(restrict_vocab) +
                   " --similarity-restrict " + std::to_string(restrict_vocab) + " --json " + path("ours.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ours = nlohmann::json::parse(read_file((root_ / "ours.json").string()));

  write(root_ / "gensim_eval.py",
        "import json, sys, logging\n"
        "from gensim.models import KeyedVectors\n"
        "kv = KeyedVectors.load_word2vec_format(sys.argv[1], binary=False)\n"
        "n = int(sys.argv[4])\n"
        "score, sections = kv.evaluate_word_analogies(sys.argv[2], restrict_vocab=n, case_insensitive=True)\n"
        "pearson, spearman, oov = kv.evaluate_word_pairs(sys.argv[3], restrict_vocab=n, case_insensitive=True)\n"
        "out = {'total_accuracy': score,\n"
        "       'sections': [(s['section'], len(s['correct']), len(s['incorrect'])) for s in sections],\n"
        "       'spearman': float(spearman[0]), 'pearson': float(pearson[0]), 'oov_ratio': float(oov)}\n"
        "print(json.dumps(out))\n");
  r = test::run_command("OMP_NUM_THREADS=1 /usr/bin/python3 " + path("gensim_eval.py") + " " + path("g.txt") + " " +
                        shell_quote(questions) + " " + shell_quote(pairs) + " " + std::to_string(restrict_vocab));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ref = nlohmann::json::parse(r.out);
  // gensim's last "section" is the total.
  const auto& ref_sections = ref["sections"];
  const auto& our_sections = ours["analogy"]["sections"];
  ASSERT_EQ(ref_sections.size(), our_sections.size() + 1);
  for (size_t i = 0; i < our_sections.size(); ++i) {
    SCOPED_TRACE(our_sections[i]["name"].get<std::string>());
    EXPECT_EQ(ref_sections[i][0], our_sections[i]["name"]);
    EXPECT_EQ(ref_sections[i][1].get<int64_t>(), our_sections[i]["correct"].get<int64_t>());
    EXPECT_EQ(ref_sections[i][1].get<int64_t>() + ref_sections[i][2].get<int64_t>(),
              our_sections[i]["seen"].get<int64_t>());
  }
  std::cout << "ours:   analogy " << ours["analogy"]["total"].dump() << "\n        similarity "
            << ours["similarity"].dump() << "\ngensim: " << ref.dump() << std::endl;
  EXPECT_NEAR(ref["total_accuracy"].get<double>(), ours["analogy"]["total"]["accuracy"].get<double>(), 1e-12);
  EXPECT_GT(ours["analogy"]["total"]["correct"].get<int64_t>(), 100);  // the planted offsets are found
  EXPECT_NEAR(ref["spearman"].get<double>(), ours["similarity"]["spearman"].get<double>(), 1e-6);
  EXPECT_NEAR(ref["pearson"].get<double>(), ours["similarity"]["pearson"].get<double>(), 1e-5);
  EXPECT_NEAR(ref["oov_ratio"].get<double>(), ours["similarity"]["oov_ratio"].get<double>(), 1e-9);
}

}  // namespace
