#pragma once
// The threads of the in-place Hogwild kernels (word2vec_sgd.cpp, glove_sgd.cpp): contiguous
// chunks of a batch's examples, one per thread, updating the shared tables without locks.
#include <cstdint>
#include <functional>

namespace nlpzoo {

/// Cuts [0, n) into min(threads, n) contiguous chunks of ceil(n / chunks) items and calls
/// fn(chunk, begin, end) for each, the chunks on LibTorch's intra-op OpenMP threads
/// (at::parallel_for; at::set_num_threads, i.e. NLPZOO_THREADS, sets how many run at once).
/// Returns, once every chunk is done, the sum of fn's results in chunk order (the kernels'
/// losses: the same sum whatever thread finished first), and rethrows an exception fn threw.
/// threads <= 1 or n <= 1: one call fn(0, 0, n) on this thread; n <= 0: none, 0.
///
/// Why a file of its own: at::parallel_for is an inline template whose OpenMP branch exists only
/// where _OPENMP is defined (ATen/Parallel-inl.h); in a file compiled without -fopenmp it calls
/// fn once, serially. This file alone is compiled with OpenMP (CMakeLists.txt), so the shared
/// precompiled header keeps its flags; until it existed both kernels ran on one thread whatever
/// NLPZOO_THREADS said.
double parallel_chunks(int64_t n, int64_t threads, const std::function<double(int64_t chunk, int64_t begin, int64_t end)>& fn);

}  // namespace nlpzoo
