#include "infer/projection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace nlpzoo {

PcaResult pca(const torch::Tensor& x, int64_t k) {
  if (x.dim() != 2 || x.size(0) < 2)
    throw std::invalid_argument("pca: x must be [N >= 2, D]");
  if (k < 1 || k > std::min(x.size(0), x.size(1)))
    throw std::invalid_argument("pca: k must be in [1, min(N, D)] (got " + std::to_string(k) + ")");
  torch::NoGradGuard no_grad;
  const auto centred = x.to(torch::kFloat64) - x.to(torch::kFloat64).mean(/*dim=*/0, /*keepdim=*/true);  // [N, D]
  auto [U, S, Vh] = at::linalg_svd(centred, /*full_matrices=*/false);  // U [N, r], S [r], Vh [r, D]
  U = U.slice(1, 0, k);
  Vh = Vh.slice(0, 0, k);
  // svd_flip: make the largest |U| entry of each axis positive.
  const auto largest = U.abs().argmax(/*dim=*/0);                                     // [k]
  const auto signs = U.gather(0, largest.unsqueeze(0)).squeeze(0).sign();             // [k]
  const auto fixed_signs = torch::where(signs == 0, torch::ones_like(signs), signs);  // [k]
  U = U * fixed_signs.unsqueeze(0);
  Vh = Vh * fixed_signs.unsqueeze(1);
  const auto var = S * S;
  PcaResult r;
  r.points = (U * S.slice(0, 0, k).unsqueeze(0)).to(torch::kFloat32);  // [N, k]
  r.components = Vh.to(torch::kFloat32);
  const double total = var.sum().item<double>();
  r.explained_variance_ratio = (total > 0 ? var.slice(0, 0, k) / total : torch::zeros({k}, torch::kFloat64))
                                   .to(torch::kFloat32);
  return r;
}

torch::Tensor tsne_conditional_probabilities(const torch::Tensor& sq_distances, double perplexity) {
  const int64_t N = sq_distances.size(0);
  const double target = std::log(perplexity);  // nats
  auto beta = torch::ones({N, 1}, torch::kFloat64);
  auto lo = torch::zeros({N, 1}, torch::kFloat64);
  auto hi = torch::full({N, 1}, std::numeric_limits<double>::infinity(), torch::kFloat64);
  const auto off_diagonal = 1 - torch::eye(N, torch::kFloat64);  // [N, N]
  // Shifting each row by its smallest distance leaves p_{j|i} unchanged and keeps exp() from
  // underflowing to 0 for far-apart points.
  const auto row_min = std::get<0>(
      (sq_distances + torch::diag(torch::full({N}, std::numeric_limits<double>::infinity(), torch::kFloat64)))
          .min(/*dim=*/1, /*keepdim=*/true));                                          // [N, 1], diagonal left out
  const auto shifted = ((sq_distances - row_min) * off_diagonal).clamp_min(0);  // [N, N], diag 0
  torch::Tensor P;
  for (int iter = 0; iter < 100; ++iter) {
    P = torch::exp(-shifted * beta) * off_diagonal;  // [N, N]
    const auto sum = P.sum(/*dim=*/1, /*keepdim=*/true);
    // H(P_i) = log Σ_j e^{-β d_ij} + β Σ_j d_ij p_{j|i}
    const auto H = torch::log(sum) + beta * (shifted * P).sum(/*dim=*/1, /*keepdim=*/true) / sum;  // [N, 1]
    P = P / sum;
    const auto too_flat = H > target;  // entropy too high: a larger β narrows the Gaussian
    if ((H - target).abs().max().item<double>() < 1e-5) break;
    lo = torch::where(too_flat, beta, lo);
    hi = torch::where(too_flat, hi, beta);
    beta = torch::where(torch::isinf(hi), beta * 2, (lo + hi) / 2);
  }
  return P;
}

torch::Tensor tsne(const torch::Tensor& x, const TsneOptions& o) {
  if (x.dim() != 2) throw std::invalid_argument("tsne: x must be [N, D]");
  const int64_t N = x.size(0);
  if (N < 3) throw std::invalid_argument("tsne: needs at least 3 points (got " + std::to_string(N) + ")");
  if (!(o.perplexity > 0) || o.perplexity >= N - 1)
    throw std::invalid_argument("tsne: perplexity must be in (0, N - 1) = (0, " + std::to_string(N - 1) +
                                ") (got " + std::to_string(o.perplexity) + ")");
  if (o.dims < 1 || o.iterations < 0 || !(o.learning_rate >= 0) || o.early_exaggeration < 1 || o.pca_dims < 0)
    throw std::invalid_argument("tsne: dims >= 1, iterations >= 0, learning_rate >= 0, early_exaggeration >= 1 needed");
  const double learning_rate =
      o.learning_rate > 0 ? o.learning_rate : std::max(N / o.early_exaggeration / 4, 50.0);
  torch::NoGradGuard no_grad;
  auto X = x.to(torch::kFloat64);
  if (o.pca_dims > 0 && X.size(1) > o.pca_dims) X = pca(X, std::min(o.pca_dims, N)).points.to(torch::kFloat64);

  const auto sq = [](const torch::Tensor& m) {  // [N, N] squared Euclidean distances
    const auto n = (m * m).sum(/*dim=*/1, /*keepdim=*/true);
    return (n - 2 * m.matmul(m.t()) + n.t()).clamp_min(0);
  };
  auto P = tsne_conditional_probabilities(sq(X), o.perplexity);
  P = ((P + P.t()) / (2.0 * N)).clamp_min(1e-12);  // [N, N], symmetric, sums to ~1

  // The descent runs in float32, as scikit-learn's does: its [N, N] passes are memory-bound,
  // so half the bytes is about twice the speed.
  P = P.to(torch::kFloat32);
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal(0.0, 1e-2);  // σ = 1e-2: variance 1e-4 (§3.4)
  std::vector<float> init(static_cast<size_t>(N * o.dims));
  for (auto& v : init) v = static_cast<float>(normal(rng));
  auto Y = torch::tensor(init, torch::kFloat32).view({N, o.dims});  // [N, dims]
  auto velocity = torch::zeros_like(Y);
  auto gains = torch::ones_like(Y);

  for (int64_t t = 0; t < o.iterations; ++t) {
    const double exaggeration = t < o.exaggeration_iterations ? o.early_exaggeration : 1.0;
    const auto n2 = (Y * Y).sum(/*dim=*/1, /*keepdim=*/true);  // [N, 1]
    // num_ij = (1 + |y_i − y_j|²)^-1, zero diagonal; |y_i − y_j|² = n_i + n_j − 2 y_i·y_j
    auto num = torch::addmm(n2 + n2.t(), Y, Y.t(), /*beta=*/1, /*alpha=*/-2);  // [N, N]
    num.clamp_min_(0).add_(1).reciprocal_().fill_diagonal_(0);
    const double z = num.sum().item<double>();  // q_ij = num_ij / z
    // W_ij = (exaggeration·p_ij − q_ij) num_ij, in place to spare [N, N] temporaries
    auto W = num.mul(-1.0 / z).add_(P, exaggeration).mul_(num);  // [N, N]
    // ∂C/∂y_i = 4 Σ_j W_ij (y_i − y_j) = 4 ((Σ_j W_ij) y_i − (W Y)_i)
    const auto grad = 4 * (W.sum(/*dim=*/1, /*keepdim=*/true) * Y - W.matmul(Y));  // [N, dims]
    // Jacobs' (1988) gains: a gradient of the opposite sign to the velocity means the step
    // keeps going downhill, so that coordinate's step grows; otherwise it shrinks.
    const auto same_sign = (grad > 0) == (velocity > 0);
    gains = torch::where(same_sign, gains * 0.8, gains + 0.2).clamp_min(o.min_gain);
    const double momentum = t < o.momentum_switch ? o.initial_momentum : o.final_momentum;
    velocity = momentum * velocity - learning_rate * gains * grad;
    Y = Y + velocity;
    Y = Y - Y.mean(/*dim=*/0, /*keepdim=*/true);
  }
  return Y.to(torch::kFloat32);
}

}  // namespace nlpzoo
