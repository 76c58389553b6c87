#pragma once
// Token-level losses shared by the sequence tasks.
#include <torch/torch.h>

namespace nlpzoo {

/// Cross-entropy summed over the real target tokens, with label smoothing (Szegedy et al.
/// 2016; Vaswani et al. 2017 sec. 5.4): the target distribution puts 1 - eps on the gold token
/// and spreads eps uniformly over all V classes, so per token
///   loss = (1 - eps) * (-log p_gold) + eps * mean_v(-log p_v).
/// logits: [..., V] float; targets: [...] int64 with `pad_id` at positions that do not count.
/// Returns a scalar float tensor (a sum, not a mean). Throws c10::Error on mismatched shapes.
torch::Tensor sequence_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t pad_id,
                                     double label_smoothing);

}  // namespace nlpzoo
