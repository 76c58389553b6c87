#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace nlpzoo {

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512dq, "avx512dq");
  add(avx512vl, "avx512vl");
  add(avx512_bf16, "avx512_bf16");
  add(amx_bf16, "amx_bf16");
  return s.empty() ? "no avx" : s;
}

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28), fma = c & (1u << 12);
  if (!osxsave) return f;  // the OS saves no AVX state: no AVX of any width is usable
  unsigned xcr0_lo, xcr0_hi;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_state = (xcr0_lo & 0x6) == 0x6;     // SSE + AVX upper halves
  const bool zmm_state = (xcr0_lo & 0xe6) == 0xe6;   // + opmask, ZMM0-15 upper, ZMM16-31
  const bool amx_state = (xcr0_lo & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  f.avx = ymm_state && avx;
  f.fma = ymm_state && fma;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm_state && (b & (1u << 5));
  f.avx512f = zmm_state && (b & (1u << 16));
  f.avx512dq = zmm_state && (b & (1u << 17));
  f.avx512bw = zmm_state && (b & (1u << 30));
  f.avx512vl = zmm_state && (b & (1u << 31));
  // XCR0's tile bits say the kernel supports AMX state; a process still asks for it
  // (arch_prctl), which oneDNN does before it uses the tiles.
  f.amx_bf16 = amx_state && (d & (1u << 22));
  const unsigned max_subleaf = a;
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = zmm_state && (a & (1u << 5));
  }
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace nlpzoo
