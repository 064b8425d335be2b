// A job whose rank 1 skips a collective, under `mpirun -np 2`
// (tests/mpi_deadline.sh): both processes sum once, then rank 1 sleeps
// instead of joining the second sum. Rank 0 must give up at the deadline
// (argv[1] seconds) with a message that names rank 1 and its host, and end
// the job.
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include "rmsgrad/dist/process_group.h"

int main(int argc, char** argv) {
  rg::dist::ProcessGroup& group = rg::dist::ProcessGroup::world();
  try {
    group.set_deadline(argc > 1 ? std::atof(argv[1]) : 3.0);
    const double both = group.sum(1.0);
    if (group.rank() == 1) std::this_thread::sleep_for(std::chrono::minutes(10));
    group.sum(both);
    std::cerr << "error: the second sum finished although rank 1 never joined it\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " + group.describe(group.rank()) + ": " + e.what() + "\n";
    group.abort(3);
  }
}
