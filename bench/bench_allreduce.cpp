// The allreduce bandwidth curve: how long summing a gradient bucket over the
// processes of a job takes, by size. Run under mpirun:
//
//   mpirun -np 2 build/bin/bench_allreduce                   4 KiB … 64 MiB
//   mpirun -np 2 build/bin/bench_allreduce --min-kib 1024 --repeats 50
//
// Rank 0 prints one JSON line per size: the bytes summed, the median time of
// one blocking sum (ProcessGroup::sum, MPI_Allreduce on float32), and two
// bandwidths. "algorithm" is bytes ÷ time. "bus" is what a ring allreduce
// moves per process, 2(N−1)/N of the bytes, ÷ time: the figure the network
// must carry, which a cost model (docs/scaling.md) multiplies back out.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "bench/bench_cli.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/core/polite_threads.h"

using namespace rg;

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  int64_t min_kib = 4, max_kib = 64 * 1024;
  int repeats = 20;
  CLI::App app{"Time MPI sums of float32 buffers from 4 KiB to 64 MiB (run under mpirun)", "bench_allreduce"};
  app.add_option("--min-kib", min_kib, "smallest buffer, KiB")->check(CLI::PositiveNumber);
  app.add_option("--max-kib", max_kib, "largest buffer, KiB")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed sums per size (after two warm-ups)")->check(CLI::PositiveNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    check(group.distributed(), "bench_allreduce: run it under mpirun with at least 2 processes");
    const double ring = 2.0 * (group.size() - 1) / group.size();
    for (int64_t kib = min_kib; kib <= max_kib; kib *= 2) {
      const int64_t bytes = kib * 1024;
      std::vector<float> buffer(static_cast<size_t>(bytes / 4), 1.0f);
      std::vector<double> seconds;
      for (int r = 0; r < repeats + 2; ++r) {
        group.barrier();  // every rank starts together, so the time is the sum's, not a straggler's
        const auto start = std::chrono::steady_clock::now();
        group.sum(buffer);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (r >= 2) seconds.push_back(s);
      }
      std::sort(seconds.begin(), seconds.end());
      // Each rank's median, averaged over the ranks (they start together at the barrier).
      const double median = group.sum(seconds[seconds.size() / 2]) / group.size();
      if (group.writer())
        fmt::print("{{\"processes\": {}, \"bytes\": {}, \"median_ms\": {:.4f}, \"algorithm_gbps\": {:.3f}, "
                   "\"bus_gbps\": {:.3f}}}\n",
                   group.size(), bytes, 1e3 * median, bytes / median / 1e9,
                   ring * bytes / median / 1e9);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    group.abort(1);
  }
  return 0;
}
