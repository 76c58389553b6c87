#pragma once
// What the processor we run on can do, from the x86 CPUID instruction (Intel SDM vol. 2A,
// "CPUID"; AMD APM vol. 3, appendix E), for choosing BLAS kernels and bf16 autocast.
#include <string>

namespace nlpzoo {

/// Vector extensions that both the processor and the operating system support (the OS part:
/// XGETBV's XCR0 says which register states it saves on a context switch). All false on a
/// non-x86 build.
struct CpuFeatures {
  bool avx = false;          // AVX (256-bit float vectors)
  bool avx2 = false;         // AVX2 (256-bit integer vectors)
  bool fma = false;          // FMA3 (fused multiply-add)
  bool avx512f = false;      // AVX-512 foundation
  bool avx512bw = false;     // AVX-512 byte/word
  bool avx512dq = false;     // AVX-512 doubleword/quadword
  bool avx512vl = false;     // AVX-512 vector length (128/256-bit forms)
  bool avx512_bf16 = false;  // AVX512_BF16: bf16 dot products (Cooper Lake, Zen 4+)
  bool amx_bf16 = false;     // AMX-BF16 tiles (Sapphire Rapids+)

  /// The AVX-512 subset OpenBLAS's SkylakeX kernels use (F, BW, VL).
  bool avx512() const { return avx512f && avx512bw && avx512vl; }
  /// AVX2 with FMA, what OpenBLAS's Haswell kernels need.
  bool avx2_fma() const { return avx2 && fma; }
  /// Hardware bf16 arithmetic for matrix products (oneDNN uses it under bf16 autocast).
  bool bf16() const { return avx512_bf16 || amx_bf16; }
  /// "avx2 fma avx512f ..." (the ones present), for messages.
  std::string to_string() const;
};

/// The features of the processor this process runs on (read once, then cached).
const CpuFeatures& cpu_features();

}  // namespace nlpzoo
