#include "core/blas_core.h"

#include <dlfcn.h>
#include <strings.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "core/io.h"

namespace nlpzoo {

namespace {

// OpenBLAS 0.3.21's x86-64 DYNAMIC_ARCH cores (driver/others/dynamic.c) by the widest vector
// extension their kernels use.
struct CoreLevel {
  const char* name;
  int level;
};
constexpr CoreLevel kCores[] = {
    {"Katmai", 0},      {"Coppermine", 0},   {"Northwood", 0},   {"Prescott", 0},    {"Banias", 0},
    {"Atom", 0},        {"Core2", 0},        {"Penryn", 0},      {"Dunnington", 0},  {"Nehalem", 0},
    {"Athlon", 0},      {"Opteron", 0},      {"Opteron_SSE3", 0}, {"Barcelona", 0},  {"Nano", 0},
    {"Bobcat", 0},      {"Sandybridge", 1},  {"Bulldozer", 1},   {"Piledriver", 1},  {"Steamroller", 1},
    {"Excavator", 1},   {"Haswell", 2},      {"Zen", 2},         {"SkylakeX", 3},    {"Cooperlake", 3},
    {"SapphireRapids", 3}};
// The core we pick for a CPU whose widest extension is level i (none for plain SSE).
constexpr const char* kBestCore[] = {nullptr, "Sandybridge", "Haswell", "SkylakeX"};

const CoreLevel* find_core(const std::string& name) {
  for (const auto& c : kCores)
    if (strcasecmp(c.name, name.c_str()) == 0) return &c;
  return nullptr;
}

int cpu_level(const CpuFeatures& cpu) { return cpu.avx512() ? 3 : cpu.avx2_fma() ? 2 : cpu.avx ? 1 : 0; }

// Whether the CPU runs every instruction of `core`'s kernels.
bool cpu_runs(const CpuFeatures& cpu, const CoreLevel& core) {
  if (core.level > cpu_level(cpu)) return false;
  if (strcasecmp(core.name, "Cooperlake") == 0) return cpu.avx512_bf16;
  if (strcasecmp(core.name, "SapphireRapids") == 0) return cpu.avx512_bf16 && cpu.amx_bf16;
  return true;
}

const char* const kLevelName[] = {"SSE", "AVX", "AVX2", "AVX-512"};

// Set by choose_blas_core for the re-executed process: OpenBLAS's own choice, which
// confirm_blas_core restores if the chosen core fails the self-check.
constexpr const char* kReplacedVar = "NLPZOO_BLAS_CORE_REPLACED";
// Set once a message that changes nothing (a note, an ignored NLPZOO_BLAS_CORE) was printed, so
// the re-executed process and the processes it starts (data-parallel workers) do not repeat it.
constexpr const char* kNotedVar = "NLPZOO_BLAS_CORE_NOTED";
std::string g_replaced;  // in the re-executed process: the core nlpzoo's choice replaced

using CoreNameFn = char* (*)();
std::string call_openblas(const char* symbol) {
  auto fn = reinterpret_cast<CoreNameFn>(dlsym(RTLD_DEFAULT, symbol));
  const char* s = fn ? fn() : nullptr;
  return s ? s : "";
}

}  // namespace

int blas_core_level(const std::string& core) {
  const CoreLevel* c = find_core(core);
  return c ? c->level : -1;
}

BlasCoreDecision decide_blas_core(const std::string& openblas_core, const CpuFeatures& cpu,
                                  const char* openblas_coretype, const char* nlpzoo_blas_core) {
  const std::string mode = nlpzoo_blas_core ? nlpzoo_blas_core : "";
  const CoreLevel* named = nullptr;
  if (!mode.empty() && mode != "auto" && mode != "keep") {
    named = find_core(mode);
    if (named == nullptr) {
      std::string names;
      for (const auto& c : kCores) names += std::string(names.empty() ? "" : ", ") + c.name;
      throw UserError("NLPZOO_BLAS_CORE=" + mode + ": expected auto, keep or an OpenBLAS core (" + names + ")");
    }
    if (!cpu_runs(cpu, *named))
      throw UserError("NLPZOO_BLAS_CORE=" + mode + ": this CPU lacks the instructions of OpenBLAS's " + named->name +
                      " kernels (it has " + cpu.to_string() + ")");
  }
  if (openblas_core.empty() || mode == "keep") return {};
  if (openblas_coretype != nullptr) {
    if (named != nullptr && strcasecmp(openblas_coretype, named->name) != 0)
      return {"", std::string("nlpzoo: NLPZOO_BLAS_CORE=") + mode + " ignored: OPENBLAS_CORETYPE=" + openblas_coretype +
                      " is set in the environment"};
    // Kept, but said: a shell that exports an old core (this project's machines set Haswell on
    // an AVX-512 CPU) slows every matrix product without a sign (bench matmul --compare on a
    // 2-core AMD EPYC: Haswell 195 GFLOP/s, OpenBLAS's own Cooperlake 339).
    const int set = blas_core_level(openblas_coretype), can = cpu_level(cpu);
    if (named == nullptr && set >= 0 && set < can)
      return {"", std::string("nlpzoo: note: OPENBLAS_CORETYPE=") + openblas_coretype + " from the environment runs " +
                      kLevelName[set] + " kernels on a CPU with " + kLevelName[can] +
                      "; matrix products may be far below the machine (nlpzoo bench matmul --compare). Unset it to "
                      "let nlpzoo choose an " + kLevelName[can] + " core, or set NLPZOO_BLAS_CORE=keep to silence this"};
    return {};
  }
  if (named != nullptr) {
    if (strcasecmp(openblas_core.c_str(), named->name) == 0) return {};
    return {named->name, "nlpzoo: OpenBLAS chose its " + openblas_core + " kernels; using " + named->name +
                             " (NLPZOO_BLAS_CORE)"};
  }
  const int have = blas_core_level(openblas_core), can = cpu_level(cpu);
  if (have < 0 || have >= can) return {};
  const std::string best = kBestCore[can];
  return {best, "nlpzoo: OpenBLAS chose its " + openblas_core + " kernels on a CPU with " + kLevelName[can] +
                    "; using " + best + " (NLPZOO_BLAS_CORE=keep keeps OpenBLAS's choice)"};
}

std::vector<std::string> blas_core_candidates(const CpuFeatures& cpu) {
  std::vector<std::string> out = {"Prescott"};
  for (const char* name : {"Sandybridge", "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})
    if (cpu_runs(cpu, *find_core(name))) out.push_back(name);
  return out;
}

std::string sgemm_self_check(const MatMul& mm) {
  struct Shape {
    int64_t m, k, n;
    bool transpose_a, transpose_b;
  };
  // Odd and thin shapes reach the kernels' edge and small-matrix paths; transposed operands
  // the packing routines of the other layouts.
  const Shape shapes[] = {{1, 1, 1, false, false},    {1, 257, 1, false, false},  {257, 1, 33, false, false},
                          {1, 300, 17, false, false}, {31, 3, 2, false, false},   {17, 129, 65, false, false},
                          {64, 64, 64, true, false},  {65, 33, 129, false, true}, {127, 255, 96, true, true},
                          {256, 256, 256, false, false}};
  int64_t seed = 0;
  // Deterministic values in [-1, 1] without touching torch's random generator.
  auto values = [&seed](int64_t rows, int64_t cols) {
    ++seed;
    return torch::sin(torch::arange(rows * cols, torch::kDouble) * 0.7548776662 + static_cast<double>(seed))
        .to(torch::kFloat)
        .reshape({rows, cols});
  };
  for (const auto& s : shapes) {
    // A transposed operand is stored [k, m] (or [n, k]) and passed as a transposed view.
    torch::Tensor a = s.transpose_a ? values(s.k, s.m).t() : values(s.m, s.k);
    torch::Tensor b = s.transpose_b ? values(s.n, s.k).t() : values(s.k, s.n);
    const torch::Tensor c = mm(a, b).to(torch::kDouble).contiguous();
    if (c.sizes() != torch::IntArrayRef({s.m, s.n})) {
      std::ostringstream msg;
      msg << s.m << " x " << s.k << " x " << s.n << ": result of shape " << c.sizes();
      return msg.str();
    }
    const auto ad = a.to(torch::kDouble).contiguous(), bd = b.to(torch::kDouble).contiguous();
    const auto A = ad.accessor<double, 2>(), B = bd.accessor<double, 2>(), C = c.accessor<double, 2>();
    double worst = 0, worst_allowed = 0, worst_ratio = 0;  // the entry furthest beyond its bound
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double ref = 0, magnitude = 0;
        for (int64_t l = 0; l < s.k; ++l) {
          ref += A[i][l] * B[l][j];
          magnitude += std::abs(A[i][l] * B[l][j]);
        }
        const double error = std::abs(C[i][j] - ref), allowed = (s.k + 2) * FLT_EPSILON * magnitude + FLT_MIN;
        if (error <= allowed) continue;
        const double ratio = std::isnan(error) ? INFINITY : error / allowed;
        if (ratio > worst_ratio) {
          worst = error;
          worst_allowed = allowed;
          worst_ratio = ratio;
        }
      }
    if (worst_ratio > 0) {
      std::ostringstream msg;
      msg << s.m << " x " << s.k << " x " << s.n << (s.transpose_a ? " (A transposed)" : "")
          << (s.transpose_b ? " (B transposed)" : "") << ": max error " << worst << ", allowed " << worst_allowed;
      return msg.str();
    }
  }
  return "";
}

std::string blas_description() {
  Dl_info info{};
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  const std::string path = sgemm && dladdr(sgemm, &info) && info.dli_fname ? info.dli_fname : "?";
  const std::string config = call_openblas("openblas_get_config"), core = call_openblas("openblas_get_corename");
  if (core.empty()) return "BLAS " + path + " (not OpenBLAS)";
  std::string origin = "OpenBLAS's own choice";
  if (!g_replaced.empty())
    origin = "chosen by nlpzoo over OpenBLAS's " + g_replaced;
  else if (const char* env = std::getenv("OPENBLAS_CORETYPE"))
    origin = std::string("OPENBLAS_CORETYPE=") + env + " from the environment";
  return config + " (" + path + "), core " + core + " (" + origin + "), " + std::to_string(set_blas_threads(0)) +
         " threads";
}

int set_blas_threads(int n) {
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set == nullptr || get == nullptr) return -1;
  if (n >= 1) set(n);
  return get();
}

bool choose_blas_core() {
  const std::string own_choice = call_openblas("openblas_get_corename");
  const auto decision =
      decide_blas_core(own_choice, cpu_features(), std::getenv("OPENBLAS_CORETYPE"), std::getenv("NLPZOO_BLAS_CORE"));
  if (decision.core.empty()) {
    if (!decision.message.empty() && std::getenv(kNotedVar) == nullptr) {
      std::cerr << decision.message << std::endl;
      setenv(kNotedVar, "1", 1);
    }
    return false;
  }
  std::cerr << decision.message << std::endl;
  setenv(kReplacedVar, own_choice.c_str(), 1);
  setenv("OPENBLAS_CORETYPE", decision.core.c_str(), 1);
  return true;
}

bool confirm_blas_core() {
  const char* replaced = std::getenv(kReplacedVar);
  if (replaced == nullptr) return false;
  const std::string own_choice = replaced;
  unsetenv(kReplacedVar);  // children (bench --compare, tests) decide for themselves
  const std::string failure = sgemm_self_check([](const torch::Tensor& a, const torch::Tensor& b) { return torch::mm(a, b); });
  if (failure.empty()) {
    g_replaced = own_choice;
    return false;
  }
  std::cerr << "nlpzoo: warning: OpenBLAS's " << call_openblas("openblas_get_corename")
            << " kernels failed the sgemm self-check (" << failure << "); using OpenBLAS's own choice, " << own_choice
            << std::endl;
  unsetenv("OPENBLAS_CORETYPE");
  setenv("NLPZOO_BLAS_CORE", "keep", 1);
  return true;
}

}  // namespace nlpzoo
