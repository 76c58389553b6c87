#include "datasets/labeled_text.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "datasets/io.h"

namespace nlpzoo {

LabeledText read_labeled_text(const std::string& path) {
  LabeledText out;
  out.path = path;
  const auto lines = read_lines(path);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(i + 1);
    const size_t first_tab = line.find('\t'), last_tab = line.rfind('\t');
    if (first_tab == std::string::npos)
      throw UserError(where + ": no tab (expected 'sentence<TAB>label')");
    std::string sentence = line.substr(0, first_tab), label = line.substr(last_tab + 1);
    if (i == 0 && label == "label") continue;
    if (sentence.find_first_not_of(" \t") == std::string::npos) throw UserError(where + ": empty sentence");
    if (label.empty()) throw UserError(where + ": empty label");
    out.sentences.push_back(std::move(sentence));
    out.labels.push_back(std::move(label));
    out.lines.push_back(static_cast<int64_t>(i + 1));
  }
  if (out.sentences.empty()) throw UserError(path + ": no labeled sentence (expected lines 'sentence<TAB>label')");
  return out;
}

std::vector<std::string> sorted_label_set(const std::vector<std::string>& labels) {
  const std::set<std::string> unique(labels.begin(), labels.end());
  std::vector<std::string> out(unique.begin(), unique.end());
  std::vector<long long> values;
  for (const auto& l : out) {
    long long v = 0;
    const auto [ptr, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
    if (ec != std::errc() || ptr != l.data() + l.size()) return out;  // not all integers: byte order
    values.push_back(v);
  }
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<std::string> numeric;
  for (size_t i : order) numeric.push_back(out[i]);
  return numeric;
}

}  // namespace nlpzoo
