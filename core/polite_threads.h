#pragma once
// Threads that give their core away when they have nothing to do.
//
// Our parallel loops and the GEMMs of OpenBLAS and oneDNN all run on libgomp's thread team.
// When a thread of the team has finished its share of a parallel region, or
// waits for the next region, libgomp lets it spin before it sleeps: 300,000
// iterations (about a millisecond) unless GOMP_SPINCOUNT or OMP_WAIT_POLICY
// says otherwise. Alone on the machine that is what makes a recurrent step's
// thousands of small regions cheap: the spinning thread starts its share at
// once. Beside another busy process it is a trap. A region ends only when
// both threads have done their half; when the scheduler has given one
// thread's core to the other process, the second thread spins on the only
// core left, where the first could have run. The 2-thread RNNSearch step took
// 4–5× its time alone beside one busy loop and 45× beside another training
// run (BENCHMARKS.md, "Polite when shared").
//
// A short spin keeps the speed alone (the partner nearly always arrives
// within a few microseconds) and hands the core over when it does not. The
// spin count is read once, when libgomp loads, before main() starts, so a
// program can only choose it by starting again with the variable set. Nothing
// in the library does that by itself; a program asks for it, first thing in
// main():
//
//   int main(int argc, char** argv) {
//     rg::restart_with_polite_threads(argv);  // returns in the restarted process
//     ...
//   }
//
// When neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set, it sets
// GOMP_SPINCOUNT to kPoliteSpinCount and re-executes the program (the same
// file, process id, arguments and environment, plus that variable); the
// restarted program comes back here, finds the variable set and returns. Set
// either variable to choose otherwise, e.g. GOMP_SPINCOUNT=300000 for
// libgomp's default, and set one when running under a tool that would not
// follow the re-execution (valgrind without --trace-children). Where the
// program cannot be re-executed it returns and runs on with libgomp's
// default; so it does when OMP_NUM_THREADS is one the program will refuse
// (check_omp_num_threads, core/parallel.h). Objects built before main() are
// built twice; the experiment drivers have none.
#include <optional>

namespace rg {

// The spin count we run with (BENCHMARKS.md, "How long to spin" measures it
// against libgomp's default and shorter counts).
inline constexpr const char* kPoliteSpinCount = "1000";

// Returns only in a process that runs on without re-executing.
void restart_with_polite_threads(char** argv);

// Short spins bound what a waiting thread wastes; they cannot make a region
// whose work is split in two halves finish before both halves are done. When
// another process holds one of two cores, the half on the shared core runs
// at half speed or less, and a recurrent step of thousands of regions still
// took 2.5–2.9× its time alone. One thread on the free core takes the
// 1-thread time, about 1.8× the 2-thread step: what the lost core costs. So a
// training loop may, between steps, count the cores other processes leave
// free and use no more threads than that (at least one, at most
// set_num_threads's), and go back up when they are free again: a
// FreeCoreFollower does, when a loop asks it to (TrainingOptions::
// follow_free_cores; the drivers' --follow-free-cores). Nothing follows by
// default: changing the thread count changes how reductions are split, hence
// the last bits of a 2-thread run, which then depend on what else the
// machine runs.
//
// The count comes from the kernel: /proc/stat's procs_running (the tasks
// runnable at this instant, on every core) less this process's own runnable
// threads (/proc/self/task/*/stat), against the cores this process may run on.
// One look is a snapshot, so the count changes only when two looks in a row
// (at least kMinLookGapSeconds apart) agree.
struct FreeCores {
  int cores = 1;           // cores this process may run on
  int others_running = 0;  // runnable tasks that are not this process's threads
  int free() const { return cores - others_running; }
};
// This instant's count, or nothing where /proc cannot be read.
std::optional<FreeCores> look_at_free_cores();

// The decision, apart from the kernel's counts (tests give it their own).
class ThreadsForFreeCores {
 public:
  // The thread count to use after a look that found `free` cores free, when
  // `requested` threads were asked for and `current` are in use.
  int next(int requested, int current, int free);

 private:
  int pending_ = 0;  // the count the previous look asked for (0: none)
};

// Between two training steps: follow() looks at most every
// kMinLookGapSeconds and sets use_threads() by the rule above, returning the
// thread count now in use. Costs ~50 µs per look, nothing when one thread is
// requested. The last follower to change the count wins: one per loop.
inline constexpr double kMinLookGapSeconds = 0.01;
class FreeCoreFollower {
 public:
  int follow();

 private:
  ThreadsForFreeCores rule_;
  double last_look_ = -1.0;  // seconds on the steady clock; < 0: never looked
};

}  // namespace rg
