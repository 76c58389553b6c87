#pragma once
// Scores of a classifier's predictions against gold labels (Manning, Raghavan & Schütze
// 2008, ch. 8 and 13.6): accuracy, per-class precision, recall and F1, their macro average,
// Matthews correlation (CoLA's official metric) and the confusion matrix.
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
  // Matthews correlation coefficient, in its multi-class form R_K (Gorodkin 2004), which is
  // Matthews' (1975) (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) for two classes:
  //   (c s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2)(s^2 - sum_k t_k^2)),
  // c = correct, s = total, p_k = predicted as k, t_k = gold k; 0 when the denominator is 0
  // (every prediction or every gold label one class), as scikit-learn's matthews_corrcoef.
  double mcc = 0;
  // The positive class of a two-class task, as GLUE scores MRPC and QQP (and scikit-learn's
  // f1_score with its default pos_label=1): the label named "1"; -1 when the task has another
  // number of classes or no such label.
  int64_t positive = -1;
  /// f1[positive], 0 without one.
  double positive_f1() const { return positive >= 0 ? f1[positive] : 0.0; }

  /// A text report: accuracy and macro-F1, a table of precision / recall / F1 / support per
  /// label, and the confusion matrix with the label names (rows gold, columns predicted).
  std::string report() const;
};

/// Scores `predicted` against `gold` (class ids in [0, labels.size())). Throws
/// std::invalid_argument if the vectors differ in length, are empty, or hold an id out of range.
/// The id of the positive class among `labels` (see ClassificationScores::positive), or -1.
int64_t positive_class(const std::vector<std::string>& labels);

ClassificationScores classification_scores(const std::vector<int64_t>& gold, const std::vector<int64_t>& predicted,
                                           const std::vector<std::string>& labels);
/// The same scores from a confusion matrix [C][C] (confusion[gold][predicted] = count; C =
/// labels.size()), e.g. one summed over validation batches. Throws std::invalid_argument if it
/// is not C x C, holds a negative count or counts no example.
ClassificationScores scores_from_confusion(const std::vector<std::vector<int64_t>>& confusion,
                                           const std::vector<std::string>& labels);

}  // namespace nlpzoo
