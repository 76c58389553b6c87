#include "models/masked_softmax.h"

#include <limits>

namespace nlpzoo {

torch::Tensor masked_softmax(const torch::Tensor& scores, const torch::Tensor& allowed) {
  if (!allowed.defined()) return torch::softmax(scores, /*dim=*/-1);
  // A row with no allowed position would be 0/0. Let such rows attend everywhere (finite
  // values and gradients), then zero them: the row "sees nothing".
  auto any = allowed.any(/*dim=*/-1, /*keepdim=*/true);
  // The usual case (a causal or padding mask where every row sees a key), checked on the small
  // mask where that costs no device sync: one masked fill, forward and backward, not two.
  if (allowed.is_cpu() && any.all().item<bool>())
    return torch::softmax(scores.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity()), -1);
  auto blocked = allowed.logical_or(any.logical_not()).logical_not();
  // exp(-inf) is exactly 0, so a blocked position gets exactly zero weight.
  auto weights = torch::softmax(scores.masked_fill(blocked, -std::numeric_limits<float>::infinity()), /*dim=*/-1);
  return weights.masked_fill(any.logical_not(), 0.0);
}

}  // namespace nlpzoo
