#pragma once
// Threads that give their core away when they have nothing to do.
//
// Our parallel loops and OpenBLAS's GEMMs both run on libgomp's thread team.
// When a thread of the team has finished its share of a parallel region, or
// waits for the next region, libgomp lets it spin before it sleeps: 300,000
// iterations (about a millisecond) unless GOMP_SPINCOUNT or OMP_WAIT_POLICY
// says otherwise. Alone on the machine that is what makes a recurrent step's
// thousands of small regions cheap: the spinning thread starts its share at
// once. Beside another busy process it is a trap. A region ends only when
// both threads have done their half; when the scheduler has given one
// thread's core to the other process, the second thread spins on the only
// core left, where the first could have run. The 2-thread RNNSearch step took
// 4.7× its time alone beside one busy loop and up to 45× beside another
// training run (BENCHMARKS.md, "Polite when shared").
//
// A short spin keeps the speed alone (the partner nearly always arrives
// within a few microseconds) and hands the core over when it does not. The
// spin count is read once, when libgomp loads, before main() starts, so a
// program can only choose it by starting again with the variable set.
namespace rg {

// The spin count we run with (BENCHMARKS.md, "How long to spin" measures it
// against libgomp's default and against sleeping at once).
inline constexpr const char* kPoliteSpinCount = "1000";

// Call first in main(). When neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is
// set, sets GOMP_SPINCOUNT to kPoliteSpinCount and re-executes the program
// (the same process id, arguments and environment, plus that variable), so
// this returns only in the new process. It returns at once when either
// variable is set (the user's choice wins, e.g. GOMP_SPINCOUNT=300000 for
// libgomp's default) and also when the program cannot be re-executed; it
// then runs on with libgomp's default.
void restart_with_polite_threads(char** argv);

}  // namespace rg
