#include "train/losses.h"

namespace nlpzoo {

torch::Tensor sequence_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t pad_id,
                                     double label_smoothing) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(pad_id).reduction(torch::kSum).label_smoothing(
                              label_smoothing));
}

}  // namespace nlpzoo
