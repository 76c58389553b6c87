#pragma once
// The capability "this task's model labels sentences" (sentence classifiers). `nlpzoo classify`
// works with the run of any task that offers it (Task::sentence_classifier).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

/// One sentence's prediction: probabilities over labels() (softmax of the logits) and the
/// most probable class id; or, from a regression model (labels() empty), its score.
struct ClassPrediction {
  std::vector<float> probabilities;
  int64_t label_id = 0;
  double score = 0;  // regression only (probabilities empty)
};

class SentenceClassifier {
 public:
  virtual ~SentenceClassifier() = default;
  /// Class probabilities (or regression scores) of raw sentences (prepared as the task prepared
  /// its training text), in order, `batch_size` sentences per forward pass, in eval mode without
  /// gradients; the model must already be on `device`. A pair task (pair_input()) takes each
  /// pair as one string "A<TAB>B". Throws UserError if batch_size < 1, or for a pair task's
  /// input without exactly one tab.
  virtual std::vector<ClassPrediction> predict(const std::vector<std::string>& sentences, const torch::Device& device,
                                               int64_t batch_size) = 0;
  /// Class names; class id i is labels()[i]. Empty for a regression model (scores).
  virtual const std::vector<std::string>& labels() const = 0;
  /// Whether each input is a sentence pair (given to predict as "A<TAB>B").
  virtual bool pair_input() const { return false; }
};

}  // namespace nlpzoo
