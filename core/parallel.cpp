#include "rmsgrad/core/parallel.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {
int g_requested = 1;  // set_num_threads's n
int g_threads = 1;    // in use: ≤ g_requested
bool g_initialised = false;

void ensure_initialised() {
  if (g_initialised) return;
  g_initialised = true;
  set_num_threads(std::max(1, omp_get_max_threads()));
}
}  // namespace

std::string omp_num_threads_problem() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (value == nullptr) return {};
  const std::string_view text = value;
  const std::string wanted =
      fmt::format("give 1 to {} threads (of a list such as 4,2 the first counts), or unset it", kMaxThreads);
  if (text.empty()) return "OMP_NUM_THREADS is set but empty (an unset shell variable?); " + wanted;
  // Each item of the comma-separated list: blanks, decimal digits, blanks.
  uint64_t first = 0;
  size_t at = 0;
  for (int item = 0;; ++item) {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    const size_t digits = at;
    uint64_t number = 0;
    for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at)
      number = std::min<uint64_t>(number * 10 + static_cast<uint64_t>(text[at] - '0'), UINT32_MAX);  // no wrap
    const bool is_number = at > digits;
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    if (!is_number || (at < text.size() && text[at] != ','))
      return fmt::format("OMP_NUM_THREADS is '{}', not a number of threads; {}", text, wanted);
    if (number == 0)
      return fmt::format("OMP_NUM_THREADS is '{}': no threads{}; {}", text, item == 0 ? "" : " for a nested level",
                         wanted);
    if (item == 0) first = number;
    if (at == text.size()) break;
    ++at;  // the comma
  }
  if (first > static_cast<uint64_t>(kMaxThreads))
    return fmt::format("OMP_NUM_THREADS is '{}', more threads than the {} a program may use; {}", text, kMaxThreads,
                       wanted);
  return {};
}

void check_omp_num_threads() {
  const std::string problem = omp_num_threads_problem();
  check(problem.empty(), "{}", problem);
}

void set_num_threads(int n) {
  check(n >= 1, "set_num_threads: need at least one thread, got {}", n);
  g_initialised = true;
  g_requested = g_threads = n;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() {
  ensure_initialised();
  return g_threads;
}

int requested_threads() {
  ensure_initialised();
  return g_requested;
}

void use_threads(int k) {
  ensure_initialised();
  const int n = std::clamp(k, 1, g_requested);
  if (n == g_threads) return;
  g_threads = n;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads == 1 || n <= grain || omp_in_parallel()) {
    body(0, n);
    return;
  }
  int chunks = static_cast<int>(std::min<int64_t>(threads, (n + grain - 1) / grain));
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int c = 0; c < chunks; ++c) {
    int64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
    body(lo, hi);
  }
}

int64_t chunk_count(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  if (omp_in_parallel()) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(num_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1)));
}

void parallel_for_chunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int64_t)>& body) {
  const int64_t chunks = chunk_count(n, grain);
  if (chunks == 0) return;  // nothing to do, and no team of threads for it
  if (chunks == 1) {
    body(0, 0, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) body(c, n * c / chunks, n * (c + 1) / chunks);
}

BlasSerialScope::BlasSerialScope() { openblas_set_num_threads(1); }
BlasSerialScope::~BlasSerialScope() { openblas_set_num_threads(num_threads()); }

}  // namespace rg
