#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "core/aten_kernels.h"

using namespace nlpzoo;

namespace {

CpuFeatures avx2_fma() {
  CpuFeatures f;
  f.avx = f.avx2 = f.fma = true;
  return f;
}
// What ATen's AVX-512 kernels need: F, BW, VL, DQ (and FMA).
CpuFeatures avx512() {
  CpuFeatures f = avx2_fma();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  return f;
}

}  // namespace

TEST(AtenKernels, Avx512OnlyWhenTheCpuHasEveryPartAndNothingIsSet) {
  EXPECT_EQ(decide_aten_kernels(avx512(), nullptr), "avx512");
  EXPECT_EQ(decide_aten_kernels(CpuFeatures{}, nullptr), "");
  EXPECT_EQ(decide_aten_kernels(avx2_fma(), nullptr), "");
  // Each missing part (Knights Landing has F without BW, VL or DQ) keeps ATen's own choice.
  for (bool CpuFeatures::*part : {&CpuFeatures::avx512f, &CpuFeatures::avx512bw, &CpuFeatures::avx512vl,
                                  &CpuFeatures::avx512dq, &CpuFeatures::fma}) {
    CpuFeatures f = avx512();
    f.*part = false;
    EXPECT_EQ(decide_aten_kernels(f, nullptr), "") << f.to_string();
  }
  // A value from the environment is the user's, whatever it is.
  EXPECT_EQ(decide_aten_kernels(avx512(), "avx2"), "");
  EXPECT_EQ(decide_aten_kernels(avx512(), ""), "");
  EXPECT_EQ(decide_aten_kernels(avx512(), "AVX512"), "");
}

TEST(AtenKernels, NamesWhatLibTorchRuns) {
  const std::string k = aten_kernels();
  EXPECT_TRUE(k == "AVX512" || k == "AVX2" || k == "DEFAULT") << k;
}

// End to end: bench matmul reports the kernels; with the variable unset nlpzoo asks for AVX-512
// on a CPU that has it, with it set the user's choice stands.
TEST(AtenKernels, CliChoosesAvx512AndHonoursTheEnvironment) {
  const auto unset = test::run_command("env -u ATEN_CPU_CAPABILITY " + test::shell_quote(NLPZOO_CLI) +
                                       " bench matmul --size 64 --repeat 1");
  ASSERT_EQ(unset.status, 0) << unset.err;
  const bool has = !decide_aten_kernels(cpu_features(), nullptr).empty();
  if (has) {
    EXPECT_NE(unset.out.find("ATen kernels: AVX512\n"), std::string::npos) << unset.out;
  }
  EXPECT_NE(unset.out.find("ATen kernels: "), std::string::npos) << unset.out;
  // Also when no re-execution happens (OMP_WAIT_POLICY and the BLAS core already set).
  const auto direct = test::run_command("env -u ATEN_CPU_CAPABILITY OMP_WAIT_POLICY=PASSIVE NLPZOO_BLAS_CORE=keep " +
                                        test::shell_quote(NLPZOO_CLI) + " bench matmul --size 64 --repeat 1");
  ASSERT_EQ(direct.status, 0) << direct.err;
  if (has) {
    EXPECT_NE(direct.out.find("ATen kernels: AVX512\n"), std::string::npos) << direct.out;
  }
  if (!cpu_features().avx2_fma()) GTEST_SKIP() << "no AVX2: " << cpu_features().to_string();
  const auto asked = test::run_command("ATEN_CPU_CAPABILITY=avx2 " + test::shell_quote(NLPZOO_CLI) +
                                       " bench matmul --size 64 --repeat 1");
  ASSERT_EQ(asked.status, 0) << asked.err;
  EXPECT_NE(asked.out.find("ATen kernels: AVX2\n"), std::string::npos) << asked.out;
}
