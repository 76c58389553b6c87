#pragma once
// Scores of a classifier's predictions against gold labels (Manning, Raghavan & Schütze
// 2008, ch. 8 and 13.6): accuracy, per-class precision, recall and F1, their macro average
// and the confusion matrix.
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

struct ClassificationScores {
  std::vector<std::string> labels;              // class names; class id i is labels[i]
  std::vector<std::vector<int64_t>> confusion;  // [C][C]: confusion[gold][predicted] = count
  int64_t total = 0;                            // examples scored
  double accuracy = 0;                          // sum_i confusion[i][i] / total
  // Per class c: precision = TP / (TP + FP), recall = TP / (TP + FN),
  // F1 = 2 P R / (P + R); each 0 when its denominator is 0 (as scikit-learn's zero_division=0).
  std::vector<double> precision, recall, f1;
  std::vector<int64_t> support;                 // gold examples of each class (TP + FN)
  double macro_f1 = 0;                          // unweighted mean of f1 over the C classes

  /// A text report: accuracy and macro-F1, a table of precision / recall / F1 / support per
  /// label, and the confusion matrix with the label names (rows gold, columns predicted).
  std::string report() const;
};

/// Scores `predicted` against `gold` (class ids in [0, labels.size())). Throws
/// std::invalid_argument if the vectors differ in length, are empty, or hold an id out of range.
ClassificationScores classification_scores(const std::vector<int64_t>& gold, const std::vector<int64_t>& predicted,
                                           const std::vector<std::string>& labels);

}  // namespace nlpzoo
