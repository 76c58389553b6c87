#include "models/embeddings/word2vec_sgd.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/embeddings/row_ops.h"

namespace nlpzoo {

namespace {

// One binary logistic term: updates theta and e (not with lr 0), returns -log σ(±f) (+ for
// label 1). σ and log σ share one exp; log σ(x) = -log1p(exp(-x)) is exact where log(σ(x))
// underflows.
inline double logistic_step(float* theta, const float* h, float* e, int64_t d, bool label, float lr) {
  const float f = row_dot(theta, h, d);
  const float z = label ? f : -f;                  // the loss is -log σ(z)
  const float ez = std::exp(-std::fabs(z));
  const float loss = std::log1p(ez) + (z < 0 ? -z : 0.0f);
  const float sigma_f = f >= 0 ? 1.0f / (1.0f + ez) : ez / (1.0f + ez);
  if (lr == 0) return loss;
  const float g = lr * ((label ? 1.0f : 0.0f) - sigma_f);
  row_axpy(g, theta, e, d);
  row_axpy(g, h, theta, d);
  return loss;
}

void check_ids(const torch::Tensor& t, int64_t rows, const char* name, const char* table) {
  if (t.numel() == 0) return;
  const auto lo = t.min().item<int64_t>(), hi = t.max().item<int64_t>();
  if (lo < 0 || hi >= rows)
    throw std::invalid_argument(std::string("word2vec_sgd: ") + name + " holds ids in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "] outside the " + std::to_string(rows) + " rows of " + table);
}

void check_long(const torch::Tensor& t, int64_t dims, const char* name) {
  if (!t.defined() || t.scalar_type() != torch::kLong || t.dim() != dims || !t.device().is_cpu())
    throw std::invalid_argument(std::string("word2vec_sgd: ") + name + " must be a " + std::to_string(dims) +
                                "-d int64 CPU tensor");
}

float* float_rows(const torch::Tensor& t, int64_t dim, const char* name) {
  if (t.scalar_type() != torch::kFloat || !t.device().is_cpu() || !t.is_contiguous() || t.dim() != 2 ||
      t.size(1) != dim)
    throw std::invalid_argument(std::string("word2vec_sgd: ") + name + " must be a contiguous float32 CPU [rows, " +
                                std::to_string(dim) + "] tensor");
  return t.data_ptr<float>();
}

}  // namespace

double word2vec_sgd(torch::Tensor input_table, Word2VecObjectiveImpl& objective, const SgdExamples& ex, double lr,
                    int64_t threads) {
  const int64_t D = input_table.dim() == 2 ? input_table.size(1) : -1;
  float* in = float_rows(input_table, D, "input_table");
  auto* ns = dynamic_cast<NegativeSamplingObjectiveImpl*>(&objective);
  auto* hs = dynamic_cast<HierarchicalSoftmaxObjectiveImpl*>(&objective);
  if (ns == nullptr && hs == nullptr)
    throw std::invalid_argument("word2vec_sgd: only the ns and hs objectives update in place (softmax uses autograd)");
  const torch::Tensor& out_table = ns ? ns->output_vectors->weight : hs->node_vectors->weight;
  float* out = float_rows(out_table, D, ns ? "output_vectors" : "node_vectors");
  const int64_t out_rows = out_table.size(0);

  check_long(ex.inputs, 1, "inputs");
  check_long(ex.targets, 1, "targets");
  const int64_t B = ex.targets.size(0), M = ex.inputs.size(0);
  const bool bags = ex.offsets.defined();
  if (bags) {
    check_long(ex.offsets, 1, "offsets");
    if (ex.offsets.size(0) != B) throw std::invalid_argument("word2vec_sgd: offsets and targets differ in length");
    if (B > 0 && (ex.offsets[0].item<int64_t>() != 0 || (B > 1 && (ex.offsets.diff() < 0).any().item<bool>()) ||
                  ex.offsets[B - 1].item<int64_t>() > M))
      throw std::invalid_argument("word2vec_sgd: offsets must start at 0 and not decrease, within inputs");
  } else if (M != B) {
    throw std::invalid_argument("word2vec_sgd: pairs need one input per target");
  }
  check_ids(ex.inputs, input_table.size(0), "inputs", "the input table");
  const int64_t V = ns ? out_rows : hs->path_nodes.size(0);
  check_ids(ex.targets, V, "targets", "the vocabulary");
  int64_t K = 0;
  const int64_t* neg = nullptr;
  if (ns) {
    check_long(ex.negatives, 2, "negatives");
    if (ex.negatives.size(0) != B) throw std::invalid_argument("word2vec_sgd: negatives must be [B, K]");
    check_ids(ex.negatives, out_rows, "negatives", "output_vectors");
    K = ex.negatives.size(1);
  }
  // Contiguous copies of the ids (no-ops for the task's tensors); the parameters are used in place.
  const auto inputs = ex.inputs.contiguous(), targets = ex.targets.contiguous();
  const auto offsets = bags ? ex.offsets.contiguous() : torch::Tensor();
  const auto negatives = ns ? ex.negatives.contiguous() : torch::Tensor();
  const auto path_nodes = hs ? hs->path_nodes.to(torch::kLong).contiguous() : torch::Tensor();
  const auto path_signs = hs ? hs->path_signs.to(torch::kFloat).contiguous() : torch::Tensor();
  const int64_t* inp = inputs.data_ptr<int64_t>();
  const int64_t* tgt = targets.data_ptr<int64_t>();
  const int64_t* off = bags ? offsets.data_ptr<int64_t>() : nullptr;
  if (ns) neg = negatives.data_ptr<int64_t>();
  const int64_t L = hs ? path_nodes.size(1) : 0;
  const int64_t* nodes = hs ? path_nodes.data_ptr<int64_t>() : nullptr;
  const float* signs = hs ? path_signs.data_ptr<float>() : nullptr;
  const float rate = static_cast<float>(lr);

  double total = 0;
  std::mutex total_mutex;
  auto chunk = [&](int64_t begin, int64_t end) {
    std::vector<float> h(D), e(D);
    double loss = 0;
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = bags ? off[b] : b, last = bags ? (b + 1 < B ? off[b + 1] : M) : b + 1;
      std::fill(h.begin(), h.end(), 0.0f);
      std::fill(e.begin(), e.end(), 0.0f);
      for (int64_t r = first; r < last; ++r) row_axpy(1.0f, in + inp[r] * D, h.data(), D);
      if (last - first > 1) {
        const float inv = 1.0f / static_cast<float>(last - first);
        for (auto& x : h) x *= inv;
      }
      const int64_t w = tgt[b];
      if (ns) {
        loss += logistic_step(out + w * D, h.data(), e.data(), D, true, rate);
        for (int64_t k = 0; k < K; ++k) {
          const int64_t n = neg[b * K + k];
          if (n != w) loss += logistic_step(out + n * D, h.data(), e.data(), D, false, rate);
        }
      } else {
        // The path ends where the sign is 0 (padding).
        for (int64_t j = 0; j < L && signs[w * L + j] != 0; ++j)
          loss += logistic_step(out + nodes[w * L + j] * D, h.data(), e.data(), D, signs[w * L + j] > 0, rate);
      }
      if (rate != 0)
        for (int64_t r = first; r < last; ++r) row_axpy(1.0f, e.data(), in + inp[r] * D, D);
    }
    std::lock_guard<std::mutex> lock(total_mutex);
    total += loss;
  };
  if (B == 0) return 0.0;
  const int64_t n_threads = std::max<int64_t>(1, std::min(threads, B));
  if (n_threads == 1) {
    chunk(0, B);
  } else {
    // Exactly n_threads contiguous chunks, whatever at::parallel_for's own thread count.
    const int64_t per = (B + n_threads - 1) / n_threads;
    at::parallel_for(0, n_threads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) chunk(t * per, std::min(B, (t + 1) * per));
    });
  }
  return total;
}

}  // namespace nlpzoo
