// Subword n-grams (Bojanowski et al. 2017; fastText): the n-grams of "<w>" by hand, UTF-8
// characters, FNV-1a (fastText's sign-extended variant) against values computed in Python,
// bucket rows and bags, and the model's hidden vector as the mean of a word's rows.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "datasets/subwords.h"
#include "infer/embedding_queries.h"
#include "models/embeddings/word2vec.h"
#include "tests/test_util.h"

using namespace nlpzoo;

using Strings = std::vector<std::string>;

// The paper's example (section 3.2): "where", n = 3 -> <wh, whe, her, ere, re>.
TEST(Subwords, NgramsOfWhere) {
  EXPECT_EQ(char_ngrams("where", 3, 3), (Strings{"<wh", "whe", "her", "ere", "re>"}));
  // 3..6 on the 7 characters of "<where>": 5 + 4 + 3 + 2 = 14, by start then length; the whole
  // "<where>" (7 > maxn) is not one.
  EXPECT_EQ(char_ngrams("where", 3, 6),
            (Strings{"<wh", "<whe", "<wher", "<where", "whe", "wher", "where", "where>", "her", "here", "here>",
                     "ere", "ere>", "re>"}));
  // A short word: "<at>" (4 characters) is its own 4-gram, as in fastText.
  EXPECT_EQ(char_ngrams("at", 3, 6), (Strings{"<at", "<at>", "at>"}));
  EXPECT_TRUE(char_ngrams("a", 4, 6).empty());  // "<a>" has 3 characters
  EXPECT_TRUE(char_ngrams("where", 3, 0).empty());  // maxn 0: no subwords
}

// "niño": ñ is 2 bytes (C3 B1) but one character, never split.
TEST(Subwords, Utf8WordsAreSplitByCharacters) {
  EXPECT_EQ(char_ngrams("ni\xc3\xb1o", 3, 3), (Strings{"<ni", "ni\xc3\xb1", "i\xc3\xb1o", "\xc3\xb1o>"}));
  // 1-grams: the characters, without the lone boundary marks (fastText leaves them out).
  EXPECT_EQ(char_ngrams("ni\xc3\xb1o", 1, 1), (Strings{"n", "i", "\xc3\xb1", "o"}));
  // A 3-byte character (€, E2 82 AC) and a 4-byte one (😀, F0 9F 98 80).
  EXPECT_EQ(char_ngrams("\xe2\x82\xac\xf0\x9f\x98\x80", 2, 2),
            (Strings{"<\xe2\x82\xac", "\xe2\x82\xac\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80>"}));
}

// Expected values from Python: h = 2166136261; h ^= b (sign-extended: b | 0xFFFFFF00 for
// b >= 0x80, as fastText's int8_t cast); h = h * 16777619 mod 2^32. "a" and "foobar" are the
// published FNV-1a test vectors 0xe40c292c and 0xbf9cf968.
TEST(Subwords, Fnv1aAsFastText) {
  EXPECT_EQ(fnv1a_hash(""), 2166136261u);
  EXPECT_EQ(fnv1a_hash("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a_hash("foobar"), 0xbf9cf968u);
  EXPECT_EQ(fnv1a_hash("<wh"), 1048167652u);
  // Non-ASCII bytes: fastText's value, not textbook FNV-1a's (154815005 and 2828812820).
  EXPECT_EQ(fnv1a_hash("ni\xc3\xb1o"), 513433629u);
  EXPECT_EQ(fnv1a_hash("\xc3\xb1o>"), 831308308u);
  EXPECT_EQ(ngram_buckets("ni\xc3\xb1o", 3, 3, 1000), (std::vector<int64_t>{
                                                          fnv1a_hash("<ni") % 1000, fnv1a_hash("ni\xc3\xb1") % 1000,
                                                          fnv1a_hash("i\xc3\xb1o") % 1000, 308}));
}

TEST(Subwords, BucketRowsFollowTheWordsAndBagsExpand) {
  const Strings words = {"where", "at", "a"};
  const auto t = subword_rows(words, 3, 4, 1000);
  ASSERT_EQ(t.num_words(), 3);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.rows[t.offsets[i]], i);  // the word's own row first
    const auto buckets = ngram_buckets(words[i], 3, 4, 1000);
    ASSERT_EQ(t.offsets[i + 1] - t.offsets[i], 1 + static_cast<int64_t>(buckets.size()));
    for (size_t k = 0; k < buckets.size(); ++k) {
      EXPECT_EQ(t.rows[t.offsets[i] + 1 + k], 3 + buckets[k]);
      EXPECT_GE(t.rows[t.offsets[i] + 1 + k], 3);
      EXPECT_LT(t.rows[t.offsets[i] + 1 + k], 3 + 1000);
    }
  }
  EXPECT_EQ(t.offsets[3] - t.offsets[2], 2);  // "a": its row and "<a>"
  // Bags {where, a} and {at}: rows of where then of a, then of at.
  std::vector<int64_t> bag = {0, 2, 1}, offsets = {0, 2};
  t.expand_bags(bag, offsets);
  std::vector<int64_t> want(t.rows.begin(), t.rows.begin() + t.offsets[1]);
  want.insert(want.end(), t.rows.begin() + t.offsets[2], t.rows.end());
  want.insert(want.end(), t.rows.begin() + t.offsets[1], t.rows.begin() + t.offsets[2]);
  EXPECT_EQ(bag, want);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, t.offsets[1] + 2}));
  std::vector<int64_t> bad = {3}, bad_offsets = {0};
  EXPECT_THROW(t.expand_bags(bad, bad_offsets), std::out_of_range);
}

TEST(Subwords, BadRangesThrow) {
  EXPECT_THROW(char_ngrams("where", 0, 3), std::invalid_argument);
  EXPECT_THROW(char_ngrams("where", 4, 3), std::invalid_argument);
  EXPECT_THROW(ngram_buckets("where", 3, 6, 0), std::invalid_argument);
  EXPECT_NO_THROW(ngram_buckets("where", 3, 0, 0));  // no subwords, no buckets needed
}

// With buckets the input table is [V + bucket, D] and a bag's hidden vector is the mean of its
// rows: by hand, word 1 with n-gram rows 5 and 7 (V = 3, bucket 6) against the objective's loss
// at (v1 + v5 + v7) / 3; the gradient reaches exactly those rows, each a third of the hidden's.
TEST(Subwords, HiddenVectorIsTheMeanOfTheRows) {
  torch::manual_seed(5);
  Word2Vec m(Word2VecOptions(3, 4).bucket(6), std::vector<int64_t>{3, 2, 1});
  EXPECT_EQ(m->input_vectors->weight.sizes(), (std::vector<int64_t>{9, 4}));
  m->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : m->parameters()) p.copy_(torch::randn_like(p));
  }
  const auto v = m->input_vectors->weight;
  const auto target = torch::tensor({2}, torch::kLong), noise = torch::tensor({{0, 1}}, torch::kLong);
  auto loss = m->cbow_loss(torch::tensor({1, 5, 7}, torch::kLong), torch::tensor({0}, torch::kLong), target, noise);
  auto h = ((v[1] + v[5] + v[7]) / 3).detach().unsqueeze(0).requires_grad_(true);
  auto want = m->objective->loss(h, target, noise);
  EXPECT_NEAR(loss.item<double>(), want.item<double>(), 1e-12);
  loss.backward();
  want.backward();
  const auto grad = v.grad().to_dense();
  for (int64_t r = 0; r < 9; ++r) {
    const bool used = r == 1 || r == 5 || r == 7;
    EXPECT_LT(test::max_diff(grad[r], used ? h.grad()[0] / 3 : torch::zeros({4}, torch::kDouble)), 1e-12) << r;
  }
  EXPECT_THROW(Word2Vec(Word2VecOptions(3, 4).bucket(-1), std::vector<int64_t>{3, 2, 1}), std::invalid_argument);
}

// Queries answer a word outside the table through the OOV lookup, searching only table words.
TEST(Subwords, QueriesUseTheOovLookup) {
  WordVectors wv({"x", "y", "z"}, torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.6f, 0.8f}}));
  const OovVectors oov = [](const std::string& w) -> std::optional<torch::Tensor> {
    if (w == "unseen") return torch::tensor({2.0f, 0.1f});
    return std::nullopt;
  };
  const auto n = nearest_neighbours(wv, "unseen", 1, 0, oov);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].word, "x");
  EXPECT_NEAR(n[0].score, 2.0 / std::sqrt(4.01), 1e-6);
  EXPECT_NE(test::user_error_of([&] { nearest_neighbours(wv, "unseen", 1); }).find("'unseen' is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(test::user_error_of([&] { nearest_neighbours(wv, "other", 1, 0, oov); }).find("'other'"), std::string::npos);
  // unseen:x :: y:? -> y - x + unseen ~ (1, 1.1): z (0.6, 0.8) is the closest left.
  const auto a = analogy(wv, "unseen", "x", "y", 1, AnalogyMethod::kAdd, 0, oov);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].word, "z");
  const auto u = torch::tensor({2.0f, 0.1f}) / std::sqrt(4.01f);
  const auto d = torch::tensor({1.0f, 0.0f}) - u + torch::tensor({0.0f, 1.0f});
  EXPECT_NEAR(a[0].score, (d.dot(torch::tensor({0.6f, 0.8f})) / d.norm()).item<double>(), 1e-6);
  // A table word is its row, whatever the lookup says.
  EXPECT_TRUE(torch::equal(query_vector(wv, "y", oov), wv.vectors().slice(0, 1, 2)));
}
