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
// program can only choose it by starting again with the variable set. Every
// program that links the library does so by itself: before main() and before
// any static object of the program is built, when neither GOMP_SPINCOUNT nor
// OMP_WAIT_POLICY is set, it sets GOMP_SPINCOUNT to kPoliteSpinCount and
// re-executes itself (the same process id, arguments and environment, plus
// that variable). Set either variable to choose otherwise, e.g.
// GOMP_SPINCOUNT=300000 for libgomp's default, and set one when running under
// a tool that would not follow the re-execution (valgrind without
// --trace-children). Where the program cannot be re-executed it runs on with
// libgomp's default.
#include <optional>

namespace rg {

// The spin count we run with (BENCHMARKS.md, "How long to spin" measures it
// against libgomp's default and shorter counts).
inline constexpr const char* kPoliteSpinCount = "1000";

// What the library does before main() (core/parallel.cpp calls it); returns
// only in a process that runs on without re-executing.
void restart_with_polite_threads();

// Short spins bound what a waiting thread wastes; they cannot make a region
// whose work is split in two halves finish before both halves are done. When
// another process holds one of two cores, the half on the shared core runs
// at half speed or less, and a recurrent step of thousands of regions still
// took 2.5–2.9× its time alone. One thread on the free core takes the
// 1-thread time, about 1.8× the 2-thread step: what the lost core costs. So between
// training steps we count the cores other processes leave free and use no
// more threads than that (at least one, at most set_num_threads's), and go
// back up when they are free again.
//
// The count comes from the kernel: /proc/stat's procs_running (the tasks
// runnable at this instant, on every core) less this process's own runnable
// threads (/proc/self/task/*/stat), against the cores this process may run on.
// One look is a snapshot, so the count changes only when two looks in a row
// (at least kMinLookGapSeconds apart) agree. Every optimizer's step() looks
// (optim/optimizer.h), so any training loop shares cores this way. Changing
// the thread count changes how reductions are split, hence the last bits of a
// 2-thread run: keep_requested_threads(true) holds set_num_threads's count
// for runs that must repeat bit for bit (the drivers' --keep-threads).
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

// Between two training steps (Optimizer::step and the bench programs call
// it): looks at most every kMinLookGapSeconds and sets use_threads() by the
// rule above. Returns the thread count now in use. Costs ~50 µs per look,
// nothing when one thread is requested or the count is kept.
inline constexpr double kMinLookGapSeconds = 0.01;
int share_cores_with_other_processes();
// Holds (true) or frees (false, the default) the requested thread count;
// holding it also goes back to that count at once.
void keep_requested_threads(bool keep);

}  // namespace rg
