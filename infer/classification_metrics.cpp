#include "infer/classification_metrics.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace nlpzoo {

ClassificationScores classification_scores(const std::vector<int64_t>& gold, const std::vector<int64_t>& predicted,
                                           const std::vector<std::string>& labels) {
  if (gold.size() != predicted.size())
    throw std::invalid_argument("classification_scores: " + std::to_string(gold.size()) + " gold labels but " +
                                std::to_string(predicted.size()) + " predictions");
  if (gold.empty()) throw std::invalid_argument("classification_scores: no examples");
  const auto C = static_cast<int64_t>(labels.size());
  std::vector<std::vector<int64_t>> confusion(C, std::vector<int64_t>(C, 0));
  for (size_t i = 0; i < gold.size(); ++i) {
    if (gold[i] < 0 || gold[i] >= C || predicted[i] < 0 || predicted[i] >= C)
      throw std::invalid_argument("classification_scores: example " + std::to_string(i) + " has a class id outside [0, " +
                                  std::to_string(C) + ")");
    ++confusion[gold[i]][predicted[i]];
  }
  return scores_from_confusion(confusion, labels);
}

ClassificationScores scores_from_confusion(const std::vector<std::vector<int64_t>>& confusion,
                                           const std::vector<std::string>& labels) {
  const auto C = static_cast<int64_t>(labels.size());
  ClassificationScores s;
  s.labels = labels;
  s.confusion = confusion;
  if (static_cast<int64_t>(confusion.size()) != C)
    throw std::invalid_argument("scores_from_confusion: the matrix is not " + std::to_string(C) + " x " +
                                std::to_string(C));
  for (const auto& row : confusion) {
    if (static_cast<int64_t>(row.size()) != C)
      throw std::invalid_argument("scores_from_confusion: the matrix is not " + std::to_string(C) + " x " +
                                  std::to_string(C));
    for (int64_t v : row) {
      if (v < 0) throw std::invalid_argument("scores_from_confusion: a negative count");
      s.total += v;
    }
  }
  if (s.total == 0) throw std::invalid_argument("classification_scores: no examples");
  int64_t correct = 0;
  double sum_pt = 0, sum_p2 = 0, sum_t2 = 0;
  for (int64_t c = 0; c < C; ++c) {
    int64_t tp = s.confusion[c][c], gold_c = 0, predicted_c = 0;
    for (int64_t k = 0; k < C; ++k) {
      gold_c += s.confusion[c][k];
      predicted_c += s.confusion[k][c];
    }
    const double p = predicted_c > 0 ? static_cast<double>(tp) / predicted_c : 0.0;
    const double r = gold_c > 0 ? static_cast<double>(tp) / gold_c : 0.0;
    s.precision.push_back(p);
    s.recall.push_back(r);
    s.f1.push_back(p + r > 0 ? 2 * p * r / (p + r) : 0.0);
    s.support.push_back(gold_c);
    correct += tp;
    sum_pt += static_cast<double>(predicted_c) * gold_c;
    sum_p2 += static_cast<double>(predicted_c) * predicted_c;
    sum_t2 += static_cast<double>(gold_c) * gold_c;
  }
  s.accuracy = static_cast<double>(correct) / s.total;
  for (double f : s.f1) s.macro_f1 += f / std::max<int64_t>(C, 1);
  const double n = static_cast<double>(s.total);
  const double denominator = std::sqrt((n * n - sum_p2) * (n * n - sum_t2));
  s.mcc = denominator > 0 ? (static_cast<double>(correct) * n - sum_pt) / denominator : 0.0;
  s.positive = positive_class(s.labels);
  return s;
}

int64_t positive_class(const std::vector<std::string>& labels) {
  if (labels.size() != 2) return -1;
  for (size_t c = 0; c < labels.size(); ++c)
    if (labels[c] == "1") return static_cast<int64_t>(c);
  return -1;
}

std::string ClassificationScores::report() const {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4);
  out << "accuracy " << accuracy << " (" << static_cast<int64_t>(accuracy * total + 0.5) << " of " << total
      << ") | macro-F1 " << macro_f1 << " | MCC " << mcc;
  if (positive >= 0) out << " | F1 of label " << labels[positive] << " " << positive_f1();
  out << "\n";
  size_t width = 5;  // "label"
  for (const auto& l : labels) width = std::max(width, l.size());
  const int w = static_cast<int>(width) + 2;
  out << std::left << std::setw(w) << "label" << std::right << std::setw(10) << "precision" << std::setw(10)
      << "recall" << std::setw(10) << "F1" << std::setw(10) << "support" << "\n";
  for (size_t c = 0; c < labels.size(); ++c)
    out << std::left << std::setw(w) << labels[c] << std::right << std::setw(10) << precision[c] << std::setw(10)
        << recall[c] << std::setw(10) << f1[c] << std::setw(10) << support[c] << "\n";
  out << "confusion matrix (rows gold, columns predicted):\n" << std::left << std::setw(w) << "" << std::right;
  size_t cell = 6;
  for (const auto& l : labels) cell = std::max(cell, l.size() + 1);
  for (const auto& row : confusion)
    for (int64_t v : row) cell = std::max(cell, std::to_string(v).size() + 1);
  for (const auto& l : labels) out << std::setw(static_cast<int>(cell)) << l;
  out << "\n";
  for (size_t g = 0; g < labels.size(); ++g) {
    out << std::left << std::setw(w) << labels[g] << std::right;
    for (int64_t v : confusion[g]) out << std::setw(static_cast<int>(cell)) << v;
    out << "\n";
  }
  return out.str();
}

}  // namespace nlpzoo
