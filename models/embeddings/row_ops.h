#pragma once
// Small loops over float rows of D values for the kernels that update parameter rows in place
// (models/embeddings/glove_sgd.cpp, word2vec_sgd.cpp). Written so that GCC vectorises them at
// -O2/-O3 without -ffast-math.
#include <cstdint>

namespace nlpzoo {

/// a · b over n floats. Eight independent partial sums become vector lanes (one accumulator
/// would pin the order of the additions and keep the loop scalar); the result therefore differs
/// from a left-to-right sum by rounding only.
inline float row_dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * b[k + l];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; k < n; ++k) s += a[k] * b[k];
  return s;
}

/// y += a x over n floats.
inline void row_axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] += a * x[k];
}

}  // namespace nlpzoo
