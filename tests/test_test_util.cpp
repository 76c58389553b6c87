// The test helpers that decide whether a test may skip: under CI a missing python module or shared
// data file is a failure (tests/test_util.h, NLPZOO_REQUIRE_PYTHON_MODULE and _SHARED_FILES).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tests/test_util.h"

using namespace nlpzoo;

namespace {

// Sets CI for its lifetime, then restores the variable as it was.
class ScopedCi {
 public:
  explicit ScopedCi(const char* value) {
    if (const char* old = std::getenv("CI")) old_ = old;
    if (value) setenv("CI", value, 1); else unsetenv("CI");
  }
  ~ScopedCi() {
    if (old_) setenv("CI", old_->c_str(), 1); else unsetenv("CI");
  }

 private:
  std::optional<std::string> old_;
};

void RequireAModuleThatDoesNotExist() { NLPZOO_REQUIRE_PYTHON_MODULE("nlpzoo_no_such_module", "python3-nothing"); }
void RequireASharedFileThatDoesNotExist() { NLPZOO_REQUIRE_SHARED_FILES(test::shared_data("no/such/file.tsv")); }

// Sets NLPZOO_SHARED_DATA for its lifetime, then restores the variable as it was.
class ScopedSharedData {
 public:
  explicit ScopedSharedData(const char* dir) {
    if (const char* old = std::getenv("NLPZOO_SHARED_DATA")) old_ = old;
    setenv("NLPZOO_SHARED_DATA", dir, 1);
  }
  ~ScopedSharedData() {
    if (old_) setenv("NLPZOO_SHARED_DATA", old_->c_str(), 1); else unsetenv("NLPZOO_SHARED_DATA");
  }

 private:
  std::optional<std::string> old_;
};

}  // namespace

TEST(TestUtil, MissingPythonModuleSaysWhatToInstall) {
  EXPECT_EQ(test::missing_python_module("sys", "python3"), "");
  EXPECT_EQ(test::missing_python_module("nlpzoo_no_such_module", "python3-nothing"),
            "/usr/bin/python3 cannot import nlpzoo_no_such_module (install python3-nothing)");
}

TEST(TestUtil, UnderCiReadsTheCiVariable) {
  {
    ScopedCi ci("true");
    EXPECT_TRUE(test::under_ci());
  }
  {
    ScopedCi ci(nullptr);
    EXPECT_FALSE(test::under_ci());
  }
  ScopedCi ci("false");
  EXPECT_FALSE(test::under_ci());
}

TEST(TestUtil, MissingPythonModuleFailsUnderCi) {
  ScopedCi ci("true");
  EXPECT_FATAL_FAILURE(RequireAModuleThatDoesNotExist(), "CI=true requires it");
}

TEST(TestUtil, SharedDataIsTheBuildsFolderUnlessTheEnvironmentSaysOtherwise) {
  {
    ScopedSharedData env("");
    EXPECT_EQ(test::shared_data("glue/CoLA/dev.tsv"), std::string(NLPZOO_SHARED_DATA) + "/glue/CoLA/dev.tsv");
  }
  ScopedSharedData env("/nonexistent/shared");
  EXPECT_EQ(test::shared_data("glue/CoLA/dev.tsv"), "/nonexistent/shared/glue/CoLA/dev.tsv");
  EXPECT_EQ(test::missing_shared_files({test::shared_data("a.tsv"), NLPZOO_SOURCE_DIR, test::shared_data("b.tsv")}),
            "shared evaluation data absent: /nonexistent/shared/a.tsv, /nonexistent/shared/b.tsv "
            "(NLPZOO_SHARED_DATA=/nonexistent/shared)");
  EXPECT_EQ(test::missing_shared_files({NLPZOO_SOURCE_DIR}), "");
}

// Under CI a missing shared file fails the test: five data tests used to skip silently.
TEST(TestUtil, MissingSharedFileFailsUnderCi) {
  ScopedCi ci("true");
  EXPECT_FATAL_FAILURE(RequireASharedFileThatDoesNotExist(), "no/such/file.tsv (NLPZOO_SHARED_DATA=");
}

TEST(TestUtil, RunPythonPassesArgumentsAndCapturesOutput) {
  const auto r = test::run_python("import sys\nprint(' | '.join(sys.argv[1:]))\nsys.exit(3)\n", {"a b", "it's"});
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out, "a b | it's\n");
}
