// core/polite_threads.h: a program that asks for it restarts with libgomp
// spinning briefly, unless the user has chosen how OpenMP threads wait; one
// that does not ask runs as it started. Between steps a FreeCoreFollower uses
// no more threads than other processes leave cores free.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "rmsgrad/core/parallel.h"
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

TEST_CASE("a program that only links the library runs as it started: no restart, libgomp's own spin") {
  std::string output;
  CHECK(probe("", "first", output) != rg::kPoliteSpinCount);
  CHECK(output.find("static object built with GOMP_SPINCOUNT=(unset)\n") != std::string::npos);
  CHECK(output.find("static object built") == output.rfind("static object built"));  // one process, one build
}

TEST_CASE("restart_with_polite_threads: libgomp spins briefly, arguments intact, the program keeps its name") {
  std::string output;
  CHECK(probe("", "--restart 'two words' --third=3 ''", output) == rg::kPoliteSpinCount);
  CHECK(output.find("arg --restart\narg two words\narg --third=3\narg \n") != std::string::npos);
  // Executed by its own path, not through /proc/self/exe: pgrep finds it by name.
  CHECK(output.find("process name polite_threads_\n") != std::string::npos);  // comm keeps 15 characters
  // The restarted process built its static objects with the count set.
  const std::string built = std::string("static object built with GOMP_SPINCOUNT=") + rg::kPoliteSpinCount + "\n";
  CHECK(output.find(built) != std::string::npos);
}

TEST_CASE("the user's own GOMP_SPINCOUNT or OMP_WAIT_POLICY wins") {
  std::string output;
  CHECK(probe("GOMP_SPINCOUNT=300000", "--restart", output) == "300000");
  // OMP_WAIT_POLICY=active alone means libgomp's long spin, not ours.
  CHECK(probe("OMP_WAIT_POLICY=active", "--restart", output) != rg::kPoliteSpinCount);
  CHECK(output.find("OMP_WAIT_POLICY = 'ACTIVE'") != std::string::npos);
}

TEST_CASE("the thread count follows the free cores once two looks in a row agree") {
  rg::ThreadsForFreeCores rule;
  // Another process takes one of two cores: one look is not enough, two are.
  CHECK(rule.next(2, 2, 1) == 2);
  CHECK(rule.next(2, 2, 1) == 1);
  CHECK(rule.next(2, 1, 1) == 1);
  // It leaves: back to the two threads asked for, again after two looks.
  CHECK(rule.next(2, 1, 2) == 1);
  CHECK(rule.next(2, 1, 2) == 2);
  // A task runnable for one look only changes nothing.
  CHECK(rule.next(2, 2, 1) == 2);
  CHECK(rule.next(2, 2, 2) == 2);
  CHECK(rule.next(2, 2, 1) == 2);
  CHECK(rule.next(2, 2, 2) == 2);
  // Never more than asked for, never fewer than one.
  CHECK(rule.next(2, 2, 8) == 2);
  CHECK(rule.next(4, 4, -3) == 4);
  CHECK(rule.next(4, 4, -3) == 1);
  CHECK(rule.next(1, 1, 0) == 1);
}

TEST_CASE("use_threads stays between one and the requested count") {
  rg::set_num_threads(2);
  rg::use_threads(1);
  CHECK(rg::num_threads() == 1);
  CHECK(rg::requested_threads() == 2);
  rg::use_threads(5);
  CHECK(rg::num_threads() == 2);
  rg::use_threads(0);
  CHECK(rg::num_threads() == 1);
  rg::set_num_threads(2);
  CHECK(rg::num_threads() == 2);
}

TEST_CASE("a busy process is seen among the others running") {
  if (!rg::look_at_free_cores()) {
    MESSAGE("skipped: /proc/stat cannot be read here");
    return;
  }
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0)
    for (;;) {  // always runnable until killed
    }
  int most = 0;
  for (int look = 0; look < 20; ++look) {
    usleep(5000);
    const auto seen = rg::look_at_free_cores();
    REQUIRE(seen.has_value());
    CHECK(seen->cores >= 1);
    most = std::max(most, seen->others_running);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK(most >= 1);
}

TEST_CASE("with one thread requested a FreeCoreFollower never looks and never changes the count") {
  rg::set_num_threads(1);
  rg::FreeCoreFollower follower;
  for (int look = 0; look < 3; ++look) {
    usleep(12000);  // more than kMinLookGapSeconds
    CHECK(follower.follow() == 1);
  }
  rg::set_num_threads(2);
}
