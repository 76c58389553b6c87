#include "datasets/cooccurrence.h"

#include <algorithm>
#include <stdexcept>

namespace nlpzoo {

namespace {

// One upper-triangle entry: key = i * 2^32 + j with i <= j; x summed in double because the
// most frequent pairs add ~10^6 terms of 1/d.
struct Entry {
  uint64_t key;
  double x;
};

uint64_t key_of(uint32_t i, uint32_t j) { return i <= j ? (uint64_t{i} << 32) | j : (uint64_t{j} << 32) | i; }

// Sums the entries of equal key in place (they must be adjacent); returns the new size.
size_t sum_runs(std::vector<Entry>& v) {
  size_t out = 0;
  for (size_t k = 0; k < v.size(); ++k) {
    if (out > 0 && v[out - 1].key == v[k].key)
      v[out - 1].x += v[k].x;
    else
      v[out++] = v[k];
  }
  v.resize(out);
  return out;
}

// acc <- acc + chunk, both sorted with distinct keys. Merged backwards into acc's own storage,
// so the peak is |acc| + |chunk| entries and no third buffer.
void merge_into(std::vector<Entry>& acc, const std::vector<Entry>& chunk) {
  int64_t i = static_cast<int64_t>(acc.size()) - 1, j = static_cast<int64_t>(chunk.size()) - 1;
  acc.resize(acc.size() + chunk.size());
  for (int64_t k = static_cast<int64_t>(acc.size()) - 1; j >= 0; --k)
    acc[k] = (i >= 0 && acc[i].key > chunk[j].key) ? acc[i--] : chunk[j--];
  sum_runs(acc);
}

}  // namespace

double Cooccurrences::at(int32_t i, int32_t j) const {
  // Entries are sorted by (row, col): binary search on the pair.
  int64_t lo = 0, hi = nnz();
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (rows[mid] < i || (rows[mid] == i && cols[mid] < j))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < nnz() && rows[lo] == i && cols[lo] == j ? values[lo] : 0.0;
}

Cooccurrences count_cooccurrences(const EncodedLines& lines, int64_t window, int64_t chunk_pairs) {
  if (window < 1) throw std::invalid_argument("count_cooccurrences: window must be at least 1");
  if (chunk_pairs < 1) throw std::invalid_argument("count_cooccurrences: chunk_pairs must be at least 1");
  std::vector<Entry> acc, chunk;
  chunk.reserve(static_cast<size_t>(std::min<int64_t>(chunk_pairs, static_cast<int64_t>(lines.ids.size()) * window + 1)));
  auto flush = [&] {
    std::sort(chunk.begin(), chunk.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    sum_runs(chunk);
    merge_into(acc, chunk);
    chunk.clear();
  };
  for (int64_t s = 0; s < lines.num_lines(); ++s) {
    const int64_t begin = lines.offsets[s], end = lines.offsets[s + 1];
    for (int64_t b = begin; b < end; ++b)
      for (int64_t a = std::max(begin, b - window); a < b; ++a) {
        const auto i = static_cast<uint32_t>(lines.ids[a]), j = static_cast<uint32_t>(lines.ids[b]);
        // The ordered pairs (a, b) and (b, a) both add 1/d: to X_ij and X_ji, or twice to X_ii.
        const double d = static_cast<double>(b - a);
        chunk.push_back({key_of(i, j), (i == j ? 2.0 : 1.0) / d});
        if (static_cast<int64_t>(chunk.size()) >= chunk_pairs) flush();
      }
  }
  flush();

  // Both triangles, sorted by (row, col): row r holds the mirrors (r, c < r), which the upper
  // triangle yields in increasing c, then its own entries (r, c >= r), also increasing.
  std::vector<int64_t> start(1, 0);
  for (const auto& e : acc) {
    const auto i = static_cast<size_t>(e.key >> 32), j = static_cast<size_t>(e.key & 0xffffffffu);
    const size_t need = std::max(i, j) + 2;
    if (start.size() < need) start.resize(need, 0);
    ++start[i + 1];
    if (i != j) ++start[j + 1];
  }
  for (size_t r = 1; r < start.size(); ++r) start[r] += start[r - 1];
  Cooccurrences out;
  const size_t nnz = static_cast<size_t>(start.back());
  out.rows.resize(nnz);
  out.cols.resize(nnz);
  out.values.resize(nnz);
  auto put = [&](uint32_t r, uint32_t c, double x) {
    const auto k = static_cast<size_t>(start[r]++);
    out.rows[k] = static_cast<int32_t>(r);
    out.cols[k] = static_cast<int32_t>(c);
    out.values[k] = static_cast<float>(x);
  };
  for (const auto& e : acc) {
    const auto i = static_cast<uint32_t>(e.key >> 32), j = static_cast<uint32_t>(e.key & 0xffffffffu);
    put(i, j, e.x);
    if (i != j) put(j, i, e.x);
  }
  return out;
}

}  // namespace nlpzoo
