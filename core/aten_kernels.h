#pragma once
// Which vectorised CPU kernels ATen runs: element-wise operators, activations (tanh, GELU,
// sigmoid), softmax, layer norm, reductions; matrix products go to the BLAS (core/blas_core.h).
// LibTorch compiles each such kernel for several instruction sets and picks one per process,
// once, at the first operator call: ATEN_CPU_CAPABILITY (default | avx2 | avx512) if set, else
// its own CPU check. Debian's LibTorch 1.13 picks AVX2 on the AVX-512 EPYC these benches run on
// (`torch.__config__.show()`: "CPU capability usage: AVX2"), where its AVX-512 kernels decode
// the GRU model 13-19% faster with the same output (README, Threads; training gains nothing
// measurable, its time is in the BLAS). Upstream PyTorch's rule picks AVX-512 whenever
// the CPU has AVX-512 F, BW, VL and DQ and FMA; nlpzoo applies that rule itself.
#include <string>

#include "core/cpu_features.h"

namespace nlpzoo {

/// The pure decision: the value to put in ATEN_CPU_CAPABILITY, "" to leave ATen's own choice.
/// aten_cpu_capability: the environment's value (nullptr = unset).
///  - Set (even to an odd value, which ATen warns about): never overridden; it is how a user
///    asks for other kernels, e.g. ATEN_CPU_CAPABILITY=avx2.
///  - Unset: "avx512" when `cpu` (and the operating system, which must save the ZMM state) has
///    AVX-512 F, BW, VL and DQ and FMA, what ATen's AVX-512 kernels use; else "".
/// Throws nothing.
std::string decide_aten_kernels(const CpuFeatures& cpu, const char* aten_cpu_capability);

/// Start-up, before the first operator call: sets ATEN_CPU_CAPABILITY as decided from this
/// process's environment. Returns true when ATen had already chosen other kernels before the
/// variable was set (an operator ran first): the caller must re-execute the process.
bool choose_aten_kernels();

/// The kernels ATen runs in this process, as LibTorch names them ("AVX512", "AVX2", "DEFAULT";
/// "unknown" if LibTorch does not say). The first call fixes ATen's choice if no operator has.
std::string aten_kernels();

}  // namespace nlpzoo
