#include "models/embeddings/parallel_chunks.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#ifndef _OPENMP
#error "parallel_chunks.cpp must be compiled with OpenMP (CMakeLists.txt), or at::parallel_for runs serially"
#endif

namespace nlpzoo {

double parallel_chunks(int64_t n, int64_t threads, const std::function<double(int64_t, int64_t, int64_t)>& fn) {
  if (n <= 0) return 0;
  const int64_t chunks = std::max<int64_t>(1, std::min(threads, n));
  if (chunks == 1) return fn(0, 0, n);
  const int64_t per = (n + chunks - 1) / chunks;
  std::vector<double> results(chunks, 0.0);
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) results[c] = fn(c, std::min(n, c * per), std::min(n, (c + 1) * per));
  });
  double sum = 0;
  for (double r : results) sum += r;
  return sum;
}

}  // namespace nlpzoo
