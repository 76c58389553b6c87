#pragma once
// The capability "this task's model labels sentences" (sentence classifiers). `nlpzoo classify`
// works with the run of any task that offers it (Task::sentence_classifier).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

/// One sentence's prediction: probabilities over labels() (softmax of the logits) and the
/// most probable class id.
struct ClassPrediction {
  std::vector<float> probabilities;
  int64_t label_id = 0;
};

class SentenceClassifier {
 public:
  virtual ~SentenceClassifier() = default;
  /// Class probabilities of raw sentences (prepared as the task prepared its training text),
  /// in order, `batch_size` sentences per forward pass, in eval mode without gradients; the
  /// model must already be on `device`. Throws UserError if batch_size < 1.
  virtual std::vector<ClassPrediction> predict(const std::vector<std::string>& sentences, const torch::Device& device,
                                               int64_t batch_size) = 0;
  /// Class names; class id i is labels()[i].
  virtual const std::vector<std::string>& labels() const = 0;
};

}  // namespace nlpzoo
