// core/safetensors.h: a hostile header is refused while it is parsed, at a memory cost of the
// order of its text (a 30 MB header of nested '[' once took 2.4 GB before it failed).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/io.h"
#include "core/safetensors.h"
#include "tests/test_util.h"

using namespace nlpzoo;
using test::user_error_of;

namespace {

// A file of the safetensors layout whose header is `header` and which has no tensor bytes.
std::string write_raw(const std::filesystem::path& dir, const std::string& name, const std::string& header) {
  const auto path = (dir / name).string();
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  return path;
}

int64_t peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

TEST(Safetensors, DeepNestingIsRefusedWithoutParsingItWhole) {
  const auto dir = test::fresh_temp_dir("safetensors_nesting");
  const int64_t megabytes = 30;
  const auto path = write_raw(dir, "deep.pt", "{\"w\": " + std::string(megabytes << 20, '['));
  const auto before = peak_rss_kib();
  const auto e = user_error_of([&] { read_safetensors(path); });
  EXPECT_NE(e.find(path + ": not a valid checkpoint file (header nested deeper than 3 levels)"), std::string::npos) << e;
  // The text itself is read once: the peak grows by about its size, not 80 times it.
  EXPECT_LT(peak_rss_kib() - before, 3 * (megabytes << 10));
  const auto nested = write_raw(dir, "nested.pt", "{\"w\": {\"shape\": [[1]]}}");
  EXPECT_NE(user_error_of([&] { read_safetensors(nested); }).find("header nested deeper than 3 levels"), std::string::npos);
  const auto array = write_raw(dir, "array.pt", std::string(1 << 20, '['));
  EXPECT_NE(user_error_of([&] { read_safetensors(array); }).find("header is not a JSON object"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, AShapeLongerThanAnyTensorsIsRefused) {
  const auto dir = test::fresh_temp_dir("safetensors_long");
  std::string shape = "[1";
  for (int i = 0; i < 64; ++i) shape += ",1";
  const auto path = write_raw(dir, "long.pt", "{\"w\": {\"dtype\": \"F32\", \"shape\": " + shape +
                                                  "], \"data_offsets\": [0, 4]}}");
  EXPECT_NE(user_error_of([&] { read_safetensors(path); }).find("header array longer than 64 entries"), std::string::npos);
  // A well-formed file with the same structure and a shape within the bound still reads.
  SafetensorsFile file;
  file.tensors.emplace_back("w", torch::arange(6, torch::kFloat).reshape({1, 2, 3}));
  file.metadata["format"] = "pt";
  const auto good = (dir / "good.pt").string();
  write_safetensors(good, file);
  const auto back = read_safetensors(good);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_TRUE(torch::equal(back.tensors[0].second, file.tensors[0].second));
  EXPECT_EQ(back.metadata.at("format"), "pt");
  std::filesystem::remove_all(dir);
}
