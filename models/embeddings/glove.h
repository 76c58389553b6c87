#pragma once
// GloVe (Pennington, Socher & Manning 2014, "GloVe: Global Vectors for Word Representation"):
// every word i has a word vector w_i and a context vector w̃_i, with biases b_i and b̃_i, fitted
// to the logarithm of the co-occurrence counts X_ij (datasets/cooccurrence.h) by weighted
// least squares over the non-zero entries (eq. 8):
//   J = Σ_{i,j: X_ij > 0} f(X_ij) (w_iᵀ w̃_j + b_i + b̃_j − log X_ij)²
// with the weighting function (eq. 9)
//   f(x) = (x / x_max)^alpha if x < x_max, else 1        (x_max = 100, alpha = 3/4 in the paper).
//
// The loss here is ½ J, as GloVe's glove.c computes it (its cost adds 0.5 * f * diff² and its
// gradient is f * diff * w̃_j, the gradient of ½ J). The ½ keeps lr 0.05 meaning what it means
// in glove.c: AdaGrad's step lr * g / sqrt(a0 + Σ g²) only ignores a constant factor on the
// loss when the initial accumulator a0 is 0, and glove.c starts it at 1.
//
// Initialisation as glove.c: every entry of W, W̃, b and b̃ ~ U(−0.5/D, 0.5/D) (glove.c draws
// (rand()/RAND_MAX − 0.5) / vector_size for vectors and biases alike).
// The vectors users keep are W + W̃ (paper §4.2; glove.c's -model 2).
#include <torch/torch.h>

#include <cstdint>

namespace nlpzoo {

struct GloveOptions {
  GloveOptions(int64_t vocab_size, int64_t dim) : vocab_size_(vocab_size), dim_(dim) {}
  /// V: rows of W, W̃, b, b̃.
  TORCH_ARG(int64_t, vocab_size);
  /// D: word vector size.
  TORCH_ARG(int64_t, dim);
  /// Weighting function f: x_max > 0 and exponent alpha >= 0 (eq. 9).
  TORCH_ARG(double, x_max) = 100.0;
  TORCH_ARG(double, alpha) = 0.75;
  /// Sparse gradients for all four tables (only the rows a batch uses), as AdaGrad needs them
  /// to touch only those rows.
  TORCH_ARG(bool, sparse) = true;
  /// AdaGrad's starting sum of squared gradients (> 0) for the in-place update's accumulators
  /// (models/embeddings/glove_sgd.h); glove.c starts at 1.
  TORCH_ARG(double, initial_accumulator) = 1.0;
};

/// f(x) = min(1, (x / x_max)^alpha) elementwise (eq. 9). x: any shape, float; same shape out.
torch::Tensor glove_weight(const torch::Tensor& x, double x_max, double alpha);

class GloveImpl : public torch::nn::Module {
 public:
  /// Throws std::invalid_argument if vocab_size or dim < 1, x_max <= 0, alpha < 0 or
  /// initial_accumulator <= 0.
  explicit GloveImpl(const GloveOptions& options);

  /// ½ Σ_k f(x_k) (w_{i_k}ᵀ w̃_{j_k} + b_{i_k} + b̃_{j_k} − log x_k)² over a batch of entries.
  /// rows, cols: [N] int64 word ids in [0, V); x: [N] float32 co-occurrence values X_ij > 0.
  /// Returns a float32 scalar (0 for N = 0).
  torch::Tensor loss(const torch::Tensor& rows, const torch::Tensor& cols, const torch::Tensor& x);

  /// W + W̃: [V, D] float32 (paper §4.2), detached.
  torch::Tensor word_vectors() const;

  const GloveOptions& options() const { return options_; }

  torch::nn::Embedding word{nullptr};          // W  [V, D]
  torch::nn::Embedding context{nullptr};       // W̃  [V, D]
  torch::nn::Embedding word_bias{nullptr};     // b  [V, 1] (a column so that embedding's sparse gradient applies)
  torch::nn::Embedding context_bias{nullptr};  // b̃  [V, 1]
  // AdaGrad's per-coordinate sums of squared gradients for the in-place update (glove_sgd.h),
  // float32 of the tables' shapes, filled with initial_accumulator. Buffers, so that checkpoints
  // keep them and a resumed run continues exactly; the autograd path leaves them untouched.
  torch::Tensor word_gradsq, context_gradsq, word_bias_gradsq, context_bias_gradsq;

 private:
  GloveOptions options_;
};
TORCH_MODULE(Glove);

}  // namespace nlpzoo
