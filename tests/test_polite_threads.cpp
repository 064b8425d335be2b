// core/polite_threads.h: a program restarts with libgomp spinning briefly,
// unless the user has chosen how OpenMP threads wait.
#include <doctest/doctest.h>

#include <string>

#include "rmsgrad/core/polite_threads.h"
#include "test_util.h"

namespace {

// libgomp's own report, "GOMP_SPINCOUNT = '<n>'", of the count it loaded with.
std::string spin_count_of(const std::string& output) {
  const std::string key = "GOMP_SPINCOUNT = '";
  const size_t at = output.find(key);
  if (at == std::string::npos) return "(not reported)";
  const size_t from = at + key.size();
  return output.substr(from, output.find('\'', from) - from);
}

std::string probe(const std::string& environment, const std::string& args, std::string& output) {
  rg::test::TempDir tmp("polite_threads");
  const int code = rg::test::run_program("env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY " + environment + " " +
                                             RG_POLITE_THREADS_PROBE,
                                         args, tmp.path, output);
  REQUIRE_MESSAGE(code == 0, output);
  return spin_count_of(output);
}

}  // namespace

TEST_CASE("a program restarts with libgomp spinning briefly, its arguments intact") {
  std::string output;
  CHECK(probe("", "first 'two words' --third=3", output) == rg::kPoliteSpinCount);
  CHECK(output.find("arg first\narg two words\narg --third=3\n") != std::string::npos);
}

TEST_CASE("the user's own GOMP_SPINCOUNT or OMP_WAIT_POLICY wins") {
  std::string output;
  CHECK(probe("GOMP_SPINCOUNT=300000", "", output) == "300000");
  // OMP_WAIT_POLICY=active alone means libgomp's long spin, not ours.
  CHECK(probe("OMP_WAIT_POLICY=active", "", output) != rg::kPoliteSpinCount);
  CHECK(output.find("OMP_WAIT_POLICY = 'ACTIVE'") != std::string::npos);
}
