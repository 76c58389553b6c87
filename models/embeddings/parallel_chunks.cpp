#include "models/embeddings/parallel_chunks.h"

#include <ATen/Parallel.h>

#include <algorithm>

#ifndef _OPENMP
#error "parallel_chunks.cpp must be compiled with OpenMP (CMakeLists.txt), or at::parallel_for runs serially"
#endif

namespace nlpzoo {

void parallel_chunks(int64_t n, int64_t threads, const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t chunks = std::max<int64_t>(1, std::min(threads, n));
  if (chunks == 1) {
    fn(0, 0, n);
    return;
  }
  const int64_t per = (n + chunks - 1) / chunks;
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) fn(c, std::min(n, c * per), std::min(n, (c + 1) * per));
  });
}

}  // namespace nlpzoo
