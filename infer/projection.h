#pragma once
// Projections of word vectors to a few dimensions for pictures: PCA (via SVD) and t-SNE
// (van der Maaten & Hinton 2008, "Visualizing Data using t-SNE", JMLR 9), both on tensors.
#include <torch/torch.h>

#include <cstdint>

namespace nlpzoo {

struct PcaResult {
  torch::Tensor points;          // [N, k] float32: the centred rows projected on the k axes
  torch::Tensor components;      // [k, D] float32: the principal axes, unit rows
  torch::Tensor explained_variance_ratio;  // [k] float32: each axis's share of the total variance
};

/// Principal component analysis of x [N, D] float (N >= 2) to k <= min(N, D) dimensions: the
/// top-k right singular vectors of the centred x (computed in float64). Signs follow
/// scikit-learn's svd_flip (each axis's largest-magnitude point coordinate is positive), so
/// the result is reproducible. Throws std::invalid_argument for a bad shape or k.
PcaResult pca(const torch::Tensor& x, int64_t k = 2);

struct TsneOptions {
  int64_t dims = 2;             // output dimensions
  double perplexity = 30;       // Perp(P_i) = 2^H(P_i), effective neighbours (§2); needs N - 1 > perplexity
  int64_t iterations = 1000;    // gradient steps T
  // η; 0 = "auto": max(N / early_exaggeration / 4, 50), scikit-learn's learning_rate="auto"
  // after Belkina et al. (2019); a fixed η = 200 overshoots for small N, where p_ij ~ 1/N.
  double learning_rate = 0;
  // p_ij multiplied by this for the first exaggeration_iterations steps (§3.4): 12 for 250
  // steps as scikit-learn and openTSNE do; the paper used 4 for 50.
  double early_exaggeration = 12;
  int64_t exaggeration_iterations = 250;
  double initial_momentum = 0.5;  // α(t) for t < momentum_switch (§3.4)
  double final_momentum = 0.8;    // α(t) afterwards
  int64_t momentum_switch = 250;
  double min_gain = 0.01;       // per-parameter gains of Jacobs (1988), as the authors' tsne.py
  int64_t pca_dims = 50;        // inputs with more dimensions are first reduced by PCA (0: never)
  uint64_t seed = 0;            // of the N(0, 1e-4 I) initial points (§3.4)
};

/// Conditional probabilities p_{j|i} ∝ exp(−β_i |x_i − x_j|²) (eq. 1, β_i = 1/(2σ_i²)), β_i
/// found by bisection so that the entropy H(P_i) = log(perplexity) (nats); all rows at once.
/// sq_distances: [N, N] float64, zero diagonal. Returns [N, N] float64, rows summing to 1,
/// zero diagonal.
torch::Tensor tsne_conditional_probabilities(const torch::Tensor& sq_distances, double perplexity);

/// t-SNE of x [N, D] float: symmetric p_ij = (p_{j|i} + p_{i|j}) / 2N, Student-t
/// q_ij ∝ (1 + |y_i − y_j|²)^-1 (eq. 4), and gradient descent on KL(P‖Q) with
/// ∂C/∂y_i = 4 Σ_j (p_ij − q_ij)(y_i − y_j)(1 + |y_i − y_j|²)^-1 (eq. 5), momentum, early
/// exaggeration and gains. Exact (O(N²) memory and time per step): fine for a few thousand
/// points. Deterministic for a seed. Returns [N, dims] float32. Throws std::invalid_argument
/// when N < 3, perplexity <= 0 or perplexity >= N − 1, or an option is out of range
/// (learning_rate < 0, dims < 1, iterations < 0, early_exaggeration < 1).
torch::Tensor tsne(const torch::Tensor& x, const TsneOptions& options = {});

}  // namespace nlpzoo
