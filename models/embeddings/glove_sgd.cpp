#include "models/embeddings/glove_sgd.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/embeddings/parallel_chunks.h"
#include "models/embeddings/row_ops.h"

namespace nlpzoo {

namespace {

// θ_w ← θ_w − lr q c / sqrt(G_w), θ_c ← θ_c − lr q w / sqrt(G_c), then G += g², coordinate by
// coordinate, with both gradients taken from the rows before the step. The rows are distinct
// (W and W̃ are separate tables), hence __restrict; the file is built with -fno-math-errno so
// that sqrt vectorises (CMakeLists.txt).
inline void adagrad_pair(float* __restrict w, float* __restrict c, float* __restrict gw, float* __restrict gc,
                         float q, float lr, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const float dw = q * c[k], dc = q * w[k];
    w[k] -= lr * dw / std::sqrt(gw[k]);
    c[k] -= lr * dc / std::sqrt(gc[k]);
    gw[k] += dw * dw;
    gc[k] += dc * dc;
  }
}

float* rows_of(const torch::Tensor& t, const char* name, int64_t v, int64_t d) {
  if (!t.defined() || t.device().type() != torch::kCPU || t.scalar_type() != torch::kFloat || !t.is_contiguous() ||
      t.dim() != 2 || t.size(0) != v || t.size(1) != d)
    throw std::invalid_argument(std::string("glove_adagrad: ") + name + " must be a contiguous float32 CPU tensor [" +
                                std::to_string(v) + ", " + std::to_string(d) + "]");
  return t.data_ptr<float>();
}

}  // namespace

double glove_adagrad(GloveImpl& model, const torch::Tensor& rows, const torch::Tensor& cols, const torch::Tensor& x,
                     double lr, int64_t threads) {
  const int64_t V = model.options().vocab_size(), D = model.options().dim();
  float* W = rows_of(model.word->weight, "word.weight", V, D);
  float* C = rows_of(model.context->weight, "context.weight", V, D);
  float* b = rows_of(model.word_bias->weight, "word_bias.weight", V, 1);
  float* bc = rows_of(model.context_bias->weight, "context_bias.weight", V, 1);
  float* GW = rows_of(model.word_gradsq, "word_gradsq", V, D);
  float* GC = rows_of(model.context_gradsq, "context_gradsq", V, D);
  float* Gb = rows_of(model.word_bias_gradsq, "word_bias_gradsq", V, 1);
  float* Gbc = rows_of(model.context_bias_gradsq, "context_bias_gradsq", V, 1);
  auto check_1d = [&](const torch::Tensor& t, torch::ScalarType type, const char* name) {
    if (!t.defined() || t.device().type() != torch::kCPU || t.scalar_type() != type || t.dim() != 1 ||
        t.size(0) != rows.size(0))
      throw std::invalid_argument(std::string("glove_adagrad: ") + name + " must be a CPU [N] " +
                                  (type == torch::kLong ? "int64" : "float32") + " tensor like rows");
    return t.contiguous();
  };
  if (!rows.defined() || rows.dim() != 1) throw std::invalid_argument("glove_adagrad: rows must be [N] int64");
  const auto r = check_1d(rows, torch::kLong, "rows"), c = check_1d(cols, torch::kLong, "cols");
  const auto xs = check_1d(x, torch::kFloat, "x");
  if (!(lr >= 0)) throw std::invalid_argument("glove_adagrad: lr must not be negative");
  const int64_t n = r.size(0);
  const int64_t* ri = r.data_ptr<int64_t>();
  const int64_t* ci = c.data_ptr<int64_t>();
  const float* xv = xs.data_ptr<float>();
  for (int64_t k = 0; k < n; ++k) {
    if (ri[k] < 0 || ri[k] >= V || ci[k] < 0 || ci[k] >= V)
      throw std::invalid_argument("glove_adagrad: entry " + std::to_string(k) + " has a word id outside [0, " +
                                  std::to_string(V) + ")");
    if (!(xv[k] > 0)) throw std::invalid_argument("glove_adagrad: entry " + std::to_string(k) + " has x <= 0");
  }
  const float x_max = static_cast<float>(model.options().x_max()), alpha = static_cast<float>(model.options().alpha());
  const float rate = static_cast<float>(lr);

  auto run = [&](int64_t first, int64_t last) {
    double loss = 0;
    for (int64_t k = first; k < last; ++k) {
      const int64_t i = ri[k], j = ci[k];
      float* w = W + i * D;
      float* wc = C + j * D;
      const float d = row_dot(w, wc, D) + b[i] + bc[j] - std::log(xv[k]);
      const float f = xv[k] < x_max ? std::pow(xv[k] / x_max, alpha) : 1.0f;
      const float q = f * d;
      loss += 0.5 * static_cast<double>(q) * d;
      adagrad_pair(w, wc, GW + i * D, GC + j * D, q, rate, D);
      b[i] -= rate * q / std::sqrt(Gb[i]);
      bc[j] -= rate * q / std::sqrt(Gbc[j]);
      Gb[i] += q * q;
      Gbc[j] += q * q;
    }
    return loss;
  };

  return parallel_chunks(n, threads, [&](int64_t, int64_t begin, int64_t end) { return run(begin, end); });
}

}  // namespace nlpzoo
