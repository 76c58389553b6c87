#pragma once
// The softmax every attention in models/ uses (the RNN encoder-decoder's and the
// Transformer's): one restricted to the positions a query may attend to.
#include <torch/torch.h>

namespace nlpzoo {

/// Softmax over the last dim of `scores`, restricted to the allowed positions:
///   w_i = exp(s_i) / Σ_{j allowed} exp(s_j) where allowed, exactly 0 elsewhere.
/// scores: [..., S] float. allowed: bool, broadcastable to scores' shape (a padding mask
/// [B, 1, S], a causal mask [T, S], ...), true where attention is allowed; undefined = every
/// position is allowed (plain softmax). Returns the weights, scores' shape and dtype. A row
/// with no allowed position gets all-zero weights and finite gradients, not the NaN of 0/0.
/// Throws c10::Error when `allowed` does not broadcast to scores' shape.
torch::Tensor masked_softmax(const torch::Tensor& scores, const torch::Tensor& allowed);

}  // namespace nlpzoo
