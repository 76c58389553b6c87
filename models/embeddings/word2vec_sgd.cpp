#include "models/embeddings/word2vec_sgd.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/embeddings/parallel_chunks.h"
#include "models/embeddings/row_ops.h"

namespace nlpzoo {

namespace {

// Σ -log σ(z) over a chunk's terms without a log per term (a log1p per term took 10% of a
// training run): -log σ(z) = log(1 + e^-|z|) + max(-z, 0), and Σ log(1 + a) = log Π (1 + a) with
// every factor in (1, 2], renormalised by frexp every 64 factors (so below 2^64, far inside
// double's range).
class LogisticLossSum {
 public:
  void add(float e_minus_abs_z, float z) {
    product_ *= 1.0 + static_cast<double>(e_minus_abs_z);
    if (z < 0) linear_ -= z;
    if (++pending_ == 64) {
      int e = 0;
      product_ = std::frexp(product_, &e);
      exponent_ += e;
      pending_ = 0;
    }
  }
  double value() const { return std::log(product_) + static_cast<double>(exponent_) * std::log(2.0) + linear_; }

 private:
  double product_ = 1, linear_ = 0;
  int64_t exponent_ = 0;
  int pending_ = 0;
};

// One binary logistic term: adds its loss -log σ(±f) (+ for label 1) to `loss` and updates theta
// and e (not with lr 0). σ and the loss share one exp.
inline void logistic_step(float* theta, const float* h, float* e, int64_t d, bool label, float lr, LogisticLossSum& loss) {
  const float f = row_dot(theta, h, d);
  const float z = label ? f : -f;                  // the loss is -log σ(z)
  const float ez = std::exp(-std::fabs(z));
  loss.add(ez, z);
  if (lr == 0) return;
  const float sigma_f = f >= 0 ? 1.0f / (1.0f + ez) : ez / (1.0f + ez);
  const float g = lr * ((label ? 1.0f : 0.0f) - sigma_f);
  row_axpy(g, theta, e, d);
  row_axpy(g, h, theta, d);
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

  auto chunk = [&](int64_t begin, int64_t end) {
    std::vector<float> h(D), e(D);
    LogisticLossSum loss;
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
        logistic_step(out + w * D, h.data(), e.data(), D, true, rate, loss);
        for (int64_t k = 0; k < K; ++k) {
          const int64_t n = neg[b * K + k];
          if (n != w) logistic_step(out + n * D, h.data(), e.data(), D, false, rate, loss);
        }
      } else {
        // The path ends where the sign is 0 (padding).
        for (int64_t j = 0; j < L && signs[w * L + j] != 0; ++j)
          logistic_step(out + nodes[w * L + j] * D, h.data(), e.data(), D, signs[w * L + j] > 0, rate, loss);
      }
      if (rate != 0)
        for (int64_t r = first; r < last; ++r) row_axpy(1.0f, e.data(), in + inp[r] * D, D);
    }
    return loss.value();
  };
  return parallel_chunks(B, threads, [&](int64_t, int64_t begin, int64_t end) { return chunk(begin, end); });
}

}  // namespace nlpzoo
