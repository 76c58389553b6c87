#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/io.h"
#include "tests/test_util.h"
#include "core/blas_core.h"

using namespace nlpzoo;

namespace {

CpuFeatures sse_only() { return {}; }
CpuFeatures avx_only() {
  CpuFeatures f;
  f.avx = true;
  return f;
}
CpuFeatures avx2_fma() {
  CpuFeatures f = avx_only();
  f.avx2 = f.fma = true;
  return f;
}
// Knights Landing style: AVX-512F without BW/VL, which the SkylakeX kernels need.
CpuFeatures avx512f_only() {
  CpuFeatures f = avx2_fma();
  f.avx512f = true;
  return f;
}
CpuFeatures avx512() {
  CpuFeatures f = avx512f_only();
  f.avx512bw = f.avx512vl = true;
  return f;
}
CpuFeatures avx512_bf16() {
  CpuFeatures f = avx512();
  f.avx512_bf16 = true;
  return f;
}

// The core decide_blas_core sets ("" = OpenBLAS's own).
std::string chosen(const std::string& openblas, const CpuFeatures& cpu, const char* coretype = nullptr,
                   const char* nlpzoo = nullptr) {
  return decide_blas_core(openblas, cpu, coretype, nlpzoo).core;
}

}  // namespace

TEST(BlasCore, LevelsOfOpenBlasCoreNames) {
  EXPECT_EQ(blas_core_level("Prescott"), 0);
  EXPECT_EQ(blas_core_level("Nehalem"), 0);
  EXPECT_EQ(blas_core_level("Sandybridge"), 1);
  EXPECT_EQ(blas_core_level("Haswell"), 2);
  EXPECT_EQ(blas_core_level("zen"), 2);  // OpenBLAS reads OPENBLAS_CORETYPE case-insensitively
  EXPECT_EQ(blas_core_level("SKYLAKEX"), 3);
  EXPECT_EQ(blas_core_level("Cooperlake"), 3);
  EXPECT_EQ(blas_core_level("SapphireRapids"), 3);
  EXPECT_EQ(blas_core_level("Zen5"), -1);
  EXPECT_EQ(blas_core_level(""), -1);
}

TEST(BlasCore, AutoUpgradesOnlyACoreBelowTheCpu) {
  // OpenBLAS's core x CPU features, nothing in the environment.
  EXPECT_EQ(chosen("Prescott", avx512()), "SkylakeX");  // the new Xeon where OpenBLAS 0.3.21 picks Prescott
  EXPECT_EQ(chosen("Prescott", avx512_bf16()), "SkylakeX");
  EXPECT_EQ(chosen("Haswell", avx512()), "SkylakeX");
  EXPECT_EQ(chosen("Zen", avx512_bf16()), "SkylakeX");
  EXPECT_EQ(chosen("Sandybridge", avx2_fma()), "Haswell");
  EXPECT_EQ(chosen("Prescott", avx2_fma()), "Haswell");
  EXPECT_EQ(chosen("Prescott", avx512f_only()), "Haswell");
  EXPECT_EQ(chosen("Nehalem", avx_only()), "Sandybridge");
  // Already as wide as the CPU: left alone, including the other AVX-512 cores.
  EXPECT_EQ(chosen("SkylakeX", avx512()), "");
  EXPECT_EQ(chosen("Cooperlake", avx512_bf16()), "");
  EXPECT_EQ(chosen("Haswell", avx2_fma()), "");
  EXPECT_EQ(chosen("Zen", avx2_fma()), "");
  EXPECT_EQ(chosen("Haswell", avx512f_only()), "");
  EXPECT_EQ(chosen("Prescott", sse_only()), "");
  // A core we do not know, or a BLAS that is not OpenBLAS: left alone.
  EXPECT_EQ(chosen("Zen5", avx512()), "");
  EXPECT_EQ(chosen("", avx512()), "");
  // "auto" and an empty NLPZOO_BLAS_CORE mean the same as unset.
  EXPECT_EQ(chosen("Prescott", avx512(), nullptr, "auto"), "SkylakeX");
  EXPECT_EQ(chosen("Prescott", avx512(), nullptr, ""), "SkylakeX");
  // The upgrade says so in one line, naming both cores and how to keep OpenBLAS's choice.
  const auto d = decide_blas_core("Prescott", avx512(), nullptr, nullptr);
  EXPECT_NE(d.message.find("Prescott"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("SkylakeX"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("NLPZOO_BLAS_CORE=keep"), std::string::npos) << d.message;
  EXPECT_EQ(d.message.find('\n'), std::string::npos);
}

TEST(BlasCore, TheEnvironmentDecides) {
  // OPENBLAS_CORETYPE set by the environment is never overridden, whatever it says.
  EXPECT_EQ(chosen("Prescott", avx512(), "Prescott"), "");
  EXPECT_EQ(chosen("Haswell", avx512(), "Haswell"), "");
  EXPECT_EQ(chosen("Prescott", avx512(), ""), "");
  EXPECT_EQ(chosen("Prescott", avx512(), "Prescott", "auto"), "");
  const auto ignored = decide_blas_core("Haswell", avx512(), "Haswell", "SkylakeX");
  EXPECT_EQ(ignored.core, "");
  EXPECT_NE(ignored.message.find("OPENBLAS_CORETYPE=Haswell"), std::string::npos) << ignored.message;
  EXPECT_EQ(decide_blas_core("Haswell", avx512(), "haswell", "Haswell").message, "");  // they agree: silent
  // An environment core narrower than the CPU is kept, but said, with what to do about it.
  const auto narrow = decide_blas_core("Haswell", avx512(), "Haswell", nullptr);
  EXPECT_EQ(narrow.core, "");
  EXPECT_NE(narrow.message.find("OPENBLAS_CORETYPE=Haswell from the environment runs AVX2 kernels on a CPU with "
                                "AVX-512"),
            std::string::npos)
      << narrow.message;
  EXPECT_NE(narrow.message.find("let nlpzoo choose an AVX-512 core"), std::string::npos) << narrow.message;
  EXPECT_NE(decide_blas_core("Haswell", avx2_fma(), "Prescott", "auto").message.find("SSE kernels on a CPU with AVX2"),
            std::string::npos);
  EXPECT_EQ(decide_blas_core("SkylakeX", avx512(), "Cooperlake", nullptr).message, "");  // as wide: silent
  EXPECT_EQ(decide_blas_core("Haswell", avx2_fma(), "Zen", nullptr).message, "");
  EXPECT_EQ(decide_blas_core("Haswell", avx512(), "NoSuchCore", nullptr).message, "");  // unknown: left alone
  EXPECT_EQ(decide_blas_core("Haswell", avx512(), "Prescott", "keep").message, "");    // keep silences it
  EXPECT_EQ(decide_blas_core("", avx512(), "Prescott", nullptr).message, "");          // not OpenBLAS
  // keep: OpenBLAS's choice, silently.
  const auto keep = decide_blas_core("Prescott", avx512(), nullptr, "keep");
  EXPECT_EQ(keep.core, "");
  EXPECT_EQ(keep.message, "");
  // A name: that core, spelled as OpenBLAS spells it; nothing to do when OpenBLAS chose it.
  EXPECT_EQ(chosen("Haswell", avx512_bf16(), nullptr, "cooperlake"), "Cooperlake");
  EXPECT_EQ(chosen("SkylakeX", avx512(), nullptr, "Haswell"), "Haswell");
  EXPECT_EQ(chosen("Prescott", avx2_fma(), nullptr, "Zen"), "Zen");
  EXPECT_EQ(chosen("SkylakeX", avx512(), nullptr, "skylakex"), "");
  EXPECT_EQ(chosen("", avx512(), nullptr, "SkylakeX"), "");  // not OpenBLAS: nothing to set
}

TEST(BlasCore, BadNamesAndCoresTheCpuCannotRunAreErrors) {
  const std::string unknown = test::user_error_of([] { decide_blas_core("Haswell", avx512(), nullptr, "Skylake"); });
  EXPECT_NE(unknown.find("NLPZOO_BLAS_CORE=Skylake"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("SkylakeX"), std::string::npos) << unknown;  // lists the names
  const std::string wide = test::user_error_of([] { decide_blas_core("Haswell", avx2_fma(), nullptr, "SkylakeX"); });
  EXPECT_NE(wide.find("lacks"), std::string::npos) << wide;
  EXPECT_NE(test::user_error_of([] { decide_blas_core("SkylakeX", avx512(), nullptr, "Cooperlake"); }).find("lacks"),
            std::string::npos);  // Cooperlake's bf16 kernels need AVX512_BF16
  EXPECT_NE(test::user_error_of([] { decide_blas_core("Prescott", avx512f_only(), nullptr, "SkylakeX"); })
                .find("lacks"),
            std::string::npos);
  // The error stands even when the environment's OPENBLAS_CORETYPE would win: a typo is a typo.
  EXPECT_NE(test::user_error_of([] { decide_blas_core("Haswell", avx512(), "Haswell", "bogus"); }),
            "(no UserError thrown)");
}

TEST(BlasCore, CompareCandidatesAreWhatTheCpuRuns) {
  using V = std::vector<std::string>;
  EXPECT_EQ(blas_core_candidates(sse_only()), V({"Prescott"}));
  EXPECT_EQ(blas_core_candidates(avx2_fma()), V({"Prescott", "Sandybridge", "Haswell", "Zen"}));
  EXPECT_EQ(blas_core_candidates(avx512()), V({"Prescott", "Sandybridge", "Haswell", "Zen", "SkylakeX"}));
  EXPECT_EQ(blas_core_candidates(avx512_bf16()),
            V({"Prescott", "Sandybridge", "Haswell", "Zen", "SkylakeX", "Cooperlake"}));
}

TEST(BlasCore, SgemmSelfCheckPassesTheBlasAndCatchesWrongProducts) {
  torch::set_num_threads(1);
  const MatMul blas = [](const torch::Tensor& a, const torch::Tensor& b) { return torch::mm(a, b); };
  EXPECT_EQ(sgemm_self_check(blas), "");
  // Exact products rounded once to float pass too.
  EXPECT_EQ(sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) {
              return torch::mm(a.to(torch::kDouble), b.to(torch::kDouble)).to(torch::kFloat);
            }),
            "");
  // One entry off by a relative 1e-3 (a kernel mishandling an edge), named with its shape.
  const std::string edge = sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) {
    auto c = torch::mm(a, b);
    if (c.size(0) == 17) c[16][64] += 1e-3 * (1 + c[16][64].abs());
    return c;
  });
  EXPECT_NE(edge.find("17 x 129 x 65"), std::string::npos) << edge;
  // Products with bf16 inputs (8-bit mantissa) are beyond float rounding.
  EXPECT_NE(sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) {
              return torch::mm(a.to(torch::kBFloat16).to(torch::kFloat), b.to(torch::kBFloat16).to(torch::kFloat));
            }),
            "");
  // A NaN, a dropped term of the sum and a wrong shape fail.
  EXPECT_NE(sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) {
              auto c = torch::mm(a, b);
              if (c.numel() == 1) c.fill_(NAN);
              return c;
            }),
            "");
  EXPECT_NE(sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) {
              const int64_t k = a.size(1);
              return k > 1 ? torch::mm(a.narrow(1, 0, k - 1), b.narrow(0, 0, k - 1)) : torch::mm(a, b);
            }),
            "");
  EXPECT_NE(sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) { return torch::mm(a, b).t(); }), "");
}

// NLPZOO_THREADS reaches OpenBLAS's own pool, which torch's thread count does not: before,
// a 1-thread process still multiplied on every core (72 vs 74 GFLOP/s at 1 and 2 threads).
TEST(BlasCore, ThreadCountReachesOpenBlas) {
  const int before = set_blas_threads(0);
  if (before < 0) GTEST_SKIP() << "not OpenBLAS";
  EXPECT_EQ(set_blas_threads(1), 1);
  EXPECT_EQ(set_blas_threads(0), 1);  // 0 only reads
  set_blas_threads(before);
  for (const char* n : {"1", "2"}) {
    const auto r = test::run_command(std::string("NLPZOO_THREADS=") + n + " " + test::shell_quote(NLPZOO_CLI) +
                                     " bench matmul --size 64 --repeat 1");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(std::string(", ") + n + " threads\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("with ") + n + " threads"), std::string::npos) << r.out;
  }
}

// The CLI end to end: bench matmul names the BLAS and its core; a bad NLPZOO_BLAS_CORE is a
// clear error before any command runs; OPENBLAS_CORETYPE from the environment, keep and a
// named core are what OpenBLAS then reports.
TEST(BlasCore, CliReportsAndHonoursTheEnvironment) {
  const auto plain = test::run_cli("bench matmul --size 64 --repeat 1");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.out.find("BLAS: "), std::string::npos) << plain.out;
  if (plain.out.find("OpenBLAS") == std::string::npos) GTEST_SKIP() << "not OpenBLAS: " << plain.out;
  const auto typo = test::run_command("NLPZOO_BLAS_CORE=Skylake " + test::shell_quote(NLPZOO_CLI) + " bench matmul");
  EXPECT_EQ(typo.status, 1);
  EXPECT_NE(typo.err.find("NLPZOO_BLAS_CORE=Skylake"), std::string::npos) << typo.err;
  const auto forced = test::run_command("OPENBLAS_CORETYPE=Prescott " + test::shell_quote(NLPZOO_CLI) +
                                        " bench matmul --size 64 --repeat 1");
  ASSERT_EQ(forced.status, 0) << forced.err;
  EXPECT_NE(forced.out.find("core Prescott (OPENBLAS_CORETYPE=Prescott from the environment)"), std::string::npos)
      << forced.out;
  // Said once, though the process re-executes itself (OMP_WAIT_POLICY unset here).
  if (cpu_features().avx) {
    const auto forced_fresh = test::run_command("env -u OMP_WAIT_POLICY -u NLPZOO_BLAS_CORE_NOTED OPENBLAS_CORETYPE=Prescott " +
                                                test::shell_quote(NLPZOO_CLI) + " bench matmul --size 64 --repeat 1");
    ASSERT_EQ(forced_fresh.status, 0) << forced_fresh.err;
    const std::string note = "note: OPENBLAS_CORETYPE=Prescott from the environment";
    const auto first = forced_fresh.err.find(note);
    ASSERT_NE(first, std::string::npos) << forced_fresh.err;
    EXPECT_EQ(forced_fresh.err.find(note, first + 1), std::string::npos) << forced_fresh.err;
  }
  const auto keep = test::run_command("env -u OPENBLAS_CORETYPE NLPZOO_BLAS_CORE=keep " +
                                      test::shell_quote(NLPZOO_CLI) + " bench matmul --size 64 --repeat 1");
  ASSERT_EQ(keep.status, 0) << keep.err;
  EXPECT_NE(keep.out.find("(OpenBLAS's own choice)"), std::string::npos) << keep.out;
  EXPECT_EQ(keep.err, "");
  // A named core goes through the re-execution and the self-check (every x86-64 runs Prescott).
  const auto named = test::run_command("env -u OPENBLAS_CORETYPE NLPZOO_BLAS_CORE=Prescott " +
                                       test::shell_quote(NLPZOO_CLI) + " bench matmul --size 64 --repeat 1");
  ASSERT_EQ(named.status, 0) << named.err;
  if (keep.out.find("core Prescott ") == std::string::npos) {
    EXPECT_NE(named.out.find("core Prescott (chosen by nlpzoo over OpenBLAS's "), std::string::npos) << named.out;
    EXPECT_NE(named.err.find("using Prescott (NLPZOO_BLAS_CORE)"), std::string::npos) << named.err;
  }
}
