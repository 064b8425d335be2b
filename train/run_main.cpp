// The drivers' entry point: run_main runs a driver's training function,
// prints an error as one "error: " line, and under mpirun makes one
// process's error end the whole job (see run.h and dist/process_group.h).
#include <fmt/format.h>

#include <csignal>
#include <iostream>
#include <new>
#include <string>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/train/progress.h"
#include "rmsgrad/train/run.h"

namespace rg {

int print_error(const char* message) {
  std::cout.flush();
  clear_progress_line();
  // One write: the processes of an MPI job share the terminal, and two
  // messages written in pieces would interleave.
  std::cerr << ("error: " + one_line_escaped(message) + "\n") << std::flush;
  return 1;
}

int run_main(int argc, char** argv, int (*train)(int argc, char** argv)) {
  // A reader of stdout that goes away (`| head`) must not kill a run whose
  // log is in train.log: with SIGPIPE ignored, the write fails and printing
  // stops. A file-size limit (ulimit -f) is a write error like a full disk:
  // with SIGXFSZ ignored the write fails with EFBIG, the error names the
  // file, and the last checkpoint stays.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  dist::ProcessGroup& group = dist::ProcessGroup::world();  // joins the job first, when started by mpirun
  if (!group.distributed()) return report_errors([&] { return train(argc, argv); });
  // One process's error must end the whole job at once: the others would
  // wait for it in their next collective forever. Before the start (see
  // dist/process_group.h) every process can still end normally: one that
  // stops takes part in the start as stopped, and the others' first
  // collective throws StoppedBeforeStart. After it, only abort() ends them.
  // Until the start, what a process writes to stderr is held, and rank 0
  // prints it in the start, once for the job (every rank may have the same
  // bad flag); so an error before it is printed without the rank, which the
  // start adds where not every rank had it.
  group.hold_stderr();
  int code = 1;
  try {
    code = train(argc, argv);
  } catch (const dist::StoppedBeforeStart&) {
    return 1;  // rank 0 has said why, in the start
  } catch (const dist::ErrorOnEveryRank& e) {
    // Every process found it alike: rank 0 says it; none waits for another.
    if (group.writer()) print_error(e.what());
    try {
      group.barrier();  // rank 0 has printed before any process ends (mpirun ends the rest then)
    } catch (const std::exception&) {
    }
    return 1;
  } catch (const std::exception& e) {
    const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    const std::string message = memory ? kOutOfMemory : error_message(e);
    if (!group.started()) {
      print_error(message.c_str());  // held, and carried into the start
      group.stop_before_start(/*failed=*/true);
      return 1;
    }
    print_error(fmt::format("{}: {}", group.describe(group.rank()), message).c_str());
    group.abort(1);
  }
  if (!group.started()) group.stop_before_start(/*failed=*/code != 0);  // its flags' error, or its --help
  else if (code != 0) group.abort(code);
  return code;
}

}  // namespace rg
