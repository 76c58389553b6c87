#pragma once
// Correlation statistics shared by the word-similarity evaluation and the regression task.
#include <vector>

namespace nlpzoo {

/// 1-based ranks of x, tied values sharing the mean of the ranks they span (scipy's
/// rankdata(method="average")).
std::vector<double> average_ranks(const std::vector<double>& x);
/// Pearson's r = cov(x, y) / (σx σy). NaN when n < 2 or either side is constant.
/// Throws std::invalid_argument when the sizes differ.
double pearson_r(const std::vector<double>& x, const std::vector<double>& y);
/// Spearman's ρ: Pearson's r of the average ranks (Spearman 1904; scipy's spearmanr).
double spearman_rho(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace nlpzoo
