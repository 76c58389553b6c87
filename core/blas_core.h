#pragma once
// Which OpenBLAS kernels ("core") this process multiplies with. OpenBLAS built with
// DYNAMIC_ARCH (Debian's) picks its kernels from the CPU model when it is loaded; a model it
// does not know gets an older core (Debian's 0.3.21 ran its SSE3 "Prescott" kernels on new
// Xeons: 5x below the machine). OpenBLAS reads OPENBLAS_CORETYPE once, when it loads, so a
// better core is set in the environment and the process re-executes itself (tools/main.cpp).
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "core/cpu_features.h"

namespace nlpzoo {

/// The widest vector extension a core's kernels use: 0 SSE (Prescott, Nehalem, ...), 1 AVX
/// (Sandybridge, Bulldozer, ...), 2 AVX2+FMA (Haswell, Zen), 3 AVX-512 (SkylakeX,
/// Cooperlake, SapphireRapids); -1 for a name not in OpenBLAS 0.3.21's x86-64 list.
/// Case-insensitive, as OpenBLAS reads OPENBLAS_CORETYPE.
int blas_core_level(const std::string& core);

/// The outcome of decide_blas_core: `core` to put in OPENBLAS_CORETYPE ("" = leave OpenBLAS's
/// own choice) and `message`, one line for the log ("" = nothing to say).
struct BlasCoreDecision {
  std::string core;
  std::string message;
};

/// The pure decision. openblas_core: what openblas_get_corename() returned ("" when the BLAS is
/// not OpenBLAS); cpu: the processor's features; openblas_coretype / nlpzoo_blas_core: the
/// environment's OPENBLAS_CORETYPE and NLPZOO_BLAS_CORE (nullptr = unset).
///  - OPENBLAS_CORETYPE set (even to an odd value) is never overridden: some machines set it on
///    purpose, as older OpenBLAS builds compute wrong results or crash on some processors.
///  - NLPZOO_BLAS_CORE unset, "" or "auto": when OpenBLAS's core uses a narrower vector
///    extension than the CPU has, the best core the CPU supports (SkylakeX for AVX-512,
///    Haswell for AVX2+FMA); a core name we do not know is left alone.
///  - "keep": OpenBLAS's choice. NAME: that core (canonical spelling).
/// Throws UserError naming NLPZOO_BLAS_CORE for an unknown name or a core whose instructions
/// the CPU lacks (it would die of SIGILL).
BlasCoreDecision decide_blas_core(const std::string& openblas_core, const CpuFeatures& cpu,
                                  const char* openblas_coretype, const char* nlpzoo_blas_core);

/// The cores `nlpzoo bench matmul --compare` measures on `cpu`: Prescott (what an unknown CPU
/// may get), then those of each wider extension the CPU supports.
std::vector<std::string> blas_core_candidates(const CpuFeatures& cpu);

/// Checks an sgemm against a double-precision reference computed here by plain loops (not
/// by the BLAS under test) on a few shapes: square, odd, thin (m, n or k = 1) and transposed
/// operands, float inputs in [-1, 1]. An entry fails when
///   |C - C_ref| > (k + 2) * FLT_EPSILON * sum_l |A_il| |B_lj|,
/// a bound on float rounding that a correct kernel meets and a wrong one misses by far.
/// `mm` multiplies [m, k] by [k, n] float32 CPU tensors (at start-up: torch::mm, i.e. the
/// BLAS). Returns "" when every shape passes, else the first failure ("m x k x n: max error
/// E, allowed T").
using MatMul = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;
std::string sgemm_self_check(const MatMul& mm);

/// The BLAS this process uses, for `bench matmul`: "OpenBLAS 0.3.21 ... (path), core Haswell
/// (OPENBLAS_CORETYPE from the environment)", or the library path when it is not OpenBLAS.
std::string blas_description();

/// Sets OpenBLAS's own thread count to `n` (n < 1: leaves it) and returns the count it then
/// reports, or -1 when the BLAS is not OpenBLAS. The pthread OpenBLAS Debian ships keeps its own pool sized to
/// the machine: torch::set_num_threads does not reach it, so without this NLPZOO_THREADS=1 still
/// ran every product on all cores, and two 1-thread processes on 2 cores spun against each other.
int set_blas_threads(int n);

/// Start-up, before anything multiplies: decides as above from this process's environment,
/// sets OPENBLAS_CORETYPE if a better core is due and logs the one line. Returns true when it
/// set the variable: the caller must re-execute the process (OpenBLAS is loaded already).
/// Throws UserError for a bad NLPZOO_BLAS_CORE.
bool choose_blas_core();

/// In the re-executed process: when choose_blas_core set the core, runs sgemm_self_check.
/// On a failure it warns, restores OpenBLAS's own choice (NLPZOO_BLAS_CORE=keep) and returns
/// true: the caller re-executes once more. Otherwise returns false.
bool confirm_blas_core();

}  // namespace nlpzoo
