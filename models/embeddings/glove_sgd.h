#pragma once
// GloVe's training step without autograd: AdaGrad (Duchi, Hazan & Singer 2011) applied once per
// co-occurrence entry, sequentially, in place on the raw float rows of the model, as the paper
// trains (Pennington et al. 2014, §4.2) and glove.c does, with threads sharing the tables without
// locks (Hogwild, Recht et al. 2011).
//
// For one entry (i, j, x), from the loss of models/embeddings/glove.h (eq. 8 with glove.c's ½):
//   d = w_iᵀw̃_j + b_i + b̃_j − log x,   q = f(x) d        (f: eq. 9)
//   loss = ½ q d
//   ∂loss/∂w_i = q w̃_j,  ∂loss/∂w̃_j = q w_i,  ∂loss/∂b_i = ∂loss/∂b̃_j = q
// Every coordinate θ of w_i, w̃_j, b_i, b̃_j with gradient g then takes one AdaGrad step with its
// own accumulator G (the model's *_gradsq buffers, which start at initial_accumulator):
//   θ ← θ − lr g / sqrt(G);   G ← G + g²
// i.e. the step divides by the squares of the earlier steps' gradients, as glove.c orders it
// (LibTorch's Adagrad adds g² first). w_i's and w̃_j's gradients use both rows as they were
// before this entry's step. One difference from glove.c, on purpose: glove.c adds (lr g)² to G
// (it scales the gradient by lr before accumulating), which is this update with lr' = 1 and
// initial accumulator a0' = a0 / lr²; here G sums g² as in Duchi et al., and the config chooses
// lr and a0 (configs/glove.ini).
//
// Threads: the entries are cut into `threads` contiguous chunks, one per thread; each thread
// goes through its chunk in order. Races between threads lose or mix an update now and then,
// which AdaGrad/SGD tolerates (Hogwild); with one thread the result is deterministic.
#include <torch/torch.h>

#include <cstdint>

#include "models/embeddings/glove.h"

namespace nlpzoo {

/// Applies one AdaGrad step of rate lr per entry (rows[k], cols[k], x[k]) to `model`'s four
/// tables and their accumulators, in place. rows, cols: [N] int64 word ids in [0, V); x: [N]
/// float32 values > 0; threads >= 1. Returns the summed loss ½ Σ f d², each entry's term computed
/// from the parameters just before its own step (for one thread and entries that share no row
/// this is the model's loss before the call). Throws std::invalid_argument for a parameter or
/// accumulator that is not a contiguous float32 CPU tensor, wrong shapes or dtypes, an id out of
/// range, x <= 0, or lr < 0.
double glove_adagrad(GloveImpl& model, const torch::Tensor& rows, const torch::Tensor& cols, const torch::Tensor& x,
                     double lr, int64_t threads);

}  // namespace nlpzoo
