#include "infer/embedding_eval.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/io.h"
#include "core/statistics.h"

namespace nlpzoo {

namespace {

std::vector<std::string> split_whitespace(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string strip(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string where(const std::string& path, int64_t line) { return path + ":" + std::to_string(line) + ": "; }

// The rows that may answer or be asked about, and how a word of a question finds its row.
class AllowedVocab {
 public:
  AllowedVocab(const WordVectors& vectors, int64_t restrict_vocab, bool case_insensitive)
      : case_insensitive_(case_insensitive) {
    if (restrict_vocab < 0) throw UserError("restrict_vocab: must be >= 0 (0 = every row)");
    rows_ = restrict_vocab > 0 ? std::min(restrict_vocab, vectors.size()) : vectors.size();
    std::vector<int64_t> rep(rows_);
    // Forward order: a key keeps its first, i.e. most frequent, row (gensim builds the same
    // map from reversed keys, where later writes win).
    for (int64_t r = 0; r < rows_; ++r) {
      rep[r] = key_row_.emplace(key(vectors.words()[r]), r).first->second;
      if (rep[r] != r) more_rows_[rep[r]].push_back(r);
    }
    representative_ = torch::tensor(rep, torch::kInt64);
  }
  /// Appends every allowed row whose key is that of representative row `rep` (`rep` first).
  void rows_of(int64_t rep, std::vector<int64_t>& out) const {
    out.push_back(rep);
    const auto it = more_rows_.find(rep);
    if (it != more_rows_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }
  int64_t rows() const { return rows_; }
  /// The row standing for `word`, or -1 when it is not allowed.
  int64_t find(const std::string& word) const {
    const auto it = key_row_.find(key(word));
    return it == key_row_.end() ? -1 : it->second;
  }
  /// [R] int64: the row standing for each allowed row's key (itself unless a more frequent
  /// row has the same key).
  const torch::Tensor& representative() const { return representative_; }

 private:
  std::string key(const std::string& w) const { return case_insensitive_ ? fold_case(w) : w; }
  bool case_insensitive_;
  int64_t rows_ = 0;
  std::unordered_map<std::string, int64_t> key_row_;
  torch::Tensor representative_;
  // The other rows of keys with several (case variants: "Paris", "paris"); few, so a map.
  std::unordered_map<int64_t, std::vector<int64_t>> more_rows_;
};

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", 100 * fraction);
  return buf;
}

std::string fixed(double value, int digits) {
  if (std::isnan(value)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string pad_right(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }
std::string pad_left(const std::string& s, size_t width) { return s.size() >= width ? s : std::string(width - s.size(), ' ') + s; }

void add(AnalogyScore& into, const AnalogyScore& s) {
  into.questions += s.questions;
  into.seen += s.seen;
  into.correct += s.correct;
}

}  // namespace

std::string fold_case(const std::string& word) {
  std::string out = word;
  for (char& ch : out)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Analogies

std::vector<AnalogySection> read_analogy_questions(const std::string& path) {
  const auto lines = read_lines(path);
  std::vector<AnalogySection> sections;
  int64_t questions = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int64_t line_no = static_cast<int64_t>(i) + 1;
    const std::string line = strip(lines[i]);
    if (line.empty()) continue;
    if (line[0] == ':') {
      const std::string name = strip(line.substr(1));
      if (name.empty()) throw UserError(where(path, line_no) + "a section line needs a name (': NAME')");
      sections.push_back({name, line_no, {}});
      continue;
    }
    if (sections.empty())
      throw UserError(where(path, line_no) + "a question before the first section line (': NAME'); is this "
                      "the Google analogy format?");
    auto words = split_whitespace(line);
    if (words.size() != 4)
      throw UserError(where(path, line_no) + "expected 4 words 'a b c d' (a:b :: c:d), found " +
                      std::to_string(words.size()) + ": '" + line.substr(0, 80) + "'");
    sections.back().questions.push_back({words[0], words[1], words[2], words[3], line_no});
    ++questions;
  }
  if (questions == 0) throw UserError(path + ": no analogy questions (expected ': SECTION' lines, then 'a b c d' lines)");
  return sections;
}

AnalogyReport evaluate_analogies(const WordVectors& vectors, const std::vector<AnalogySection>& sections,
                                 const AnalogyEvalOptions& options) {
  if (options.batch < 1) throw UserError("analogy batch: must be at least 1");
  const AllowedVocab vocab(vectors, options.restrict_vocab, options.case_insensitive);
  AnalogyReport report;
  report.options = options;
  report.semantic.name = "semantic";
  report.syntactic.name = "syntactic";
  report.total.name = "total";
  torch::NoGradGuard no_grad;
  const auto W = unit_rows(vectors.vectors().slice(0, 0, vocab.rows()));  // [R, D]
  const auto& rep = vocab.representative();                               // [R]
  constexpr int64_t kMaxScores = int64_t{32} << 20;  // floats in one [batch, R] matrix: 128 MiB
  const int64_t batch = std::max<int64_t>(1, std::min(options.batch, kMaxScores / std::max<int64_t>(1, vocab.rows())));
  for (const auto& section : sections) {
    AnalogyScore score;
    score.name = section.name;
    score.questions = static_cast<int64_t>(section.questions.size());
    std::vector<int64_t> ra, rb, rc, rd;  // rows of the seen questions
    for (const auto& q : section.questions) {
      const int64_t a = vocab.find(q.a), b = vocab.find(q.b), c = vocab.find(q.c), d = vocab.find(q.expected);
      if (a < 0 || b < 0 || c < 0 || d < 0) continue;
      ra.push_back(a);
      rb.push_back(b);
      rc.push_back(c);
      rd.push_back(d);
    }
    score.seen = static_cast<int64_t>(ra.size());
    for (int64_t start = 0; start < score.seen; start += batch) {
      const int64_t n = std::min(batch, score.seen - start);
      const auto slice = [&](const std::vector<int64_t>& rows) {
        return torch::tensor(std::vector<int64_t>(rows.begin() + start, rows.begin() + start + n), torch::kInt64);
      };
      const auto ia = slice(ra), ib = slice(rb), ic = slice(rc), id = slice(rd);  // [n]
      auto scores = analogy_scores(W.index_select(0, ia), W.index_select(0, ib), W.index_select(0, ic), W,
                                   options.method);  // [n, R]
      // a, b and c never answer, nor does any other row with the same (folded) key.
      std::vector<int64_t> question, column;
      for (int64_t k = 0; k < n; ++k)
        for (const int64_t asked : {ra[start + k], rb[start + k], rc[start + k]}) {
          const size_t before = column.size();
          vocab.rows_of(asked, column);
          question.insert(question.end(), column.size() - before, k);
        }
      scores.index_put_({torch::tensor(question, torch::kInt64), torch::tensor(column, torch::kInt64)},
                        -std::numeric_limits<float>::infinity());
      const auto predicted = scores.argmax(/*dim=*/1);  // [n]
      score.correct += rep.index_select(0, predicted).eq(id).sum().item<int64_t>();
    }
    add(report.total, score);
    add(section.name.rfind("gram", 0) == 0 ? report.syntactic : report.semantic, score);
    report.sections.push_back(std::move(score));
  }
  return report;
}

std::string AnalogyReport::table() const {
  size_t width = 10;
  for (const auto& s : sections) width = std::max(width, s.name.size());
  std::ostringstream out;
  const auto row = [&](const AnalogyScore& s) {
    out << pad_right(s.name, width) << pad_left(std::to_string(s.questions), 10) << pad_left(std::to_string(s.seen), 8)
        << pad_left(std::to_string(s.correct), 9) << pad_left(percent(s.accuracy()), 11)
        << pad_left(percent(s.coverage()), 11) << "\n";
  };
  out << "Word analogies (" << analogy_method_name(options.method) << ", "
      << (options.restrict_vocab > 0 ? "first " + std::to_string(options.restrict_vocab) + " words" : "every word")
      << (options.case_insensitive ? ", case-insensitive" : ", case-sensitive") << ")\n";
  out << pad_right("section", width) << pad_left("questions", 10) << pad_left("seen", 8) << pad_left("correct", 9)
      << pad_left("accuracy%", 11) << pad_left("coverage%", 11) << "\n";
  const std::string rule(width + 49, '-');
  out << rule << "\n";
  for (const auto& s : sections) row(s);
  out << rule << "\n";
  row(semantic);
  row(syntactic);
  row(total);
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Word-pair similarity

std::vector<WordPair> read_word_pairs(const std::string& path) {
  const auto lines = read_lines(path);
  std::vector<WordPair> pairs;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int64_t line_no = static_cast<int64_t>(i) + 1;
    std::string line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (strip(line).empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (size_t s = 0, e; s <= line.size(); s = e + 1) {
      e = line.find('\t', s);
      if (e == std::string::npos) e = line.size();
      fields.push_back(line.substr(s, e - s));
    }
    if (fields.size() != 3 || strip(fields[0]).empty() || strip(fields[1]).empty())
      throw UserError(where(path, line_no) + "expected 3 tab-separated fields 'word1<TAB>word2<TAB>score', found '" +
                      line.substr(0, 80) + "'");
    const std::string text = strip(fields[2]);
    double score = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), score);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(score))
      throw UserError(where(path, line_no) + "the score '" + text.substr(0, 40) + "' is not a number");
    pairs.push_back({strip(fields[0]), strip(fields[1]), score, line_no});
  }
  if (pairs.empty()) throw UserError(path + ": no word pairs (expected lines 'word1<TAB>word2<TAB>score')");
  return pairs;
}

SimilarityReport evaluate_word_pairs(const WordVectors& vectors, const std::vector<WordPair>& pairs,
                                     const SimilarityOptions& options) {
  const AllowedVocab vocab(vectors, options.restrict_vocab, options.case_insensitive);
  SimilarityReport report;
  report.pairs = static_cast<int64_t>(pairs.size());
  std::vector<int64_t> ra, rb;
  std::vector<double> gold;
  for (const auto& p : pairs) {
    const int64_t a = vocab.find(p.a), b = vocab.find(p.b);
    if (a < 0 || b < 0) continue;
    ra.push_back(a);
    rb.push_back(b);
    gold.push_back(p.score);
  }
  report.seen = static_cast<int64_t>(gold.size());
  std::vector<double> model;
  if (!gold.empty()) {
    torch::NoGradGuard no_grad;
    const auto& V = vectors.vectors();
    const auto A = unit_rows(V.index_select(0, torch::tensor(ra, torch::kInt64)));  // [P, D]
    const auto B = unit_rows(V.index_select(0, torch::tensor(rb, torch::kInt64)));  // [P, D]
    const auto cos = (A * B).sum(/*dim=*/1).to(torch::kFloat64).contiguous();       // [P]
    model.assign(cos.data_ptr<double>(), cos.data_ptr<double>() + cos.numel());
  }
  report.spearman = spearman_rho(gold, model);
  report.pearson = pearson_r(gold, model);
  return report;
}

std::string SimilarityReport::table() const {
  std::ostringstream out;
  out << "Word-pair similarity\n"
      << "pairs " << pairs << ", seen " << seen << ", out of vocabulary " << fixed(oov_ratio(), 2) << "%\n"
      << "Spearman rho " << fixed(spearman, 4) << "\n"
      << "Pearson r    " << fixed(pearson, 4) << "\n";
  return out.str();
}

}  // namespace nlpzoo
