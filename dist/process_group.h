#pragma once
// The processes of a data-parallel job and the collective operations training
// needs from them. The engine is MPI (Debian's OpenMPI); we write no transport.
//
//   mpirun -np 4 build/bin/cifar10 ...      four processes, ranks 0..3, one job
//   build/bin/cifar10 ...                   a group of one, and MPI is never called
//
// Started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE, PMI_SIZE or
// PMIX_RANK) the program joins the job; started any other way it is a group
// of one and every operation here is the identity, so a single-process run
// needs no launcher. A build without MPI (RG_HAVE_MPI undefined) is always a
// group of one and refuses to run under a launcher with more than one
// process, rather than silently training N independent copies.
//
// The collectives follow MPI's rule: every process calls the same ones in the
// same order. Only the thread that called init() may call them (OpenMPI's
// MPI_THREAD_FUNNELED); the OpenMP threads of the kernels never do.
//
// Faults: an error on one rank must not leave the others waiting forever in
// a collective. abort() (which run_main calls for an rg::Error under a
// launcher) makes the launcher kill every process of the job; a process that
// dies is noticed by mpirun, which kills the rest and exits non-zero.
//
// A peer that neither fails nor arrives (its host's network gone, a branch
// that skipped a collective, a hang) is caught by the deadline: every
// collective is started non-blocking and waited for by polling, and a process
// that has waited longer than deadline() asks every other process, over a
// second communicator, which collective it is in. Processes that are waiting
// themselves answer at once; after kAnswerSeconds the waiting process throws
// an rg::Error that names the collective, how long it waited, and each rank
// (with its host) that had not arrived: where it is waiting, or that it did
// not answer at all (busy outside any collective, hung, or unreachable).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"

namespace rg::dist {

class ProcessGroup {
 public:
  // The job this process belongs to. The first call joins it (MPI_Init_thread
  // when launched by MPI); call it at the start of main, before any thread
  // exists. MPI is finalised at normal exit.
  static ProcessGroup& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  // Rank 0: the one process that writes logs, metrics, checkpoints and figures.
  bool writer() const { return rank_ == 0; }
  // The host (hostname) a rank runs on, gathered when the job starts.
  const std::string& host(int rank) const { return hosts_.at(static_cast<size_t>(rank)); }
  // "rank 1 of 2 (host2)", for messages.
  std::string describe(int rank) const;

  // How long any collective may wait for the others, in seconds (0: for
  // ever). The default, 10 minutes, is longer than any step, checkpoint or
  // rank 0's validation of the drivers' defaults.
  static constexpr double kDefaultDeadlineSeconds = 600.0;
  static constexpr double kAnswerSeconds = 2.0;
  void set_deadline(double seconds);
  double deadline() const { return deadline_seconds_; }

  // Element-wise sums over every process, in place, blocking.
  void sum(std::span<float> values) const;
  void sum(std::span<double> values) const;
  double sum(double value) const;
  // Rank `root`'s values, everywhere.
  void broadcast(std::span<float> values, int root = 0) const;
  std::string broadcast(const std::string& text, int root = 0) const;
  // Every rank's text, in rank order, on every rank.
  std::vector<std::string> all_gather(const std::string& text) const;
  // Every rank's values end to end, in rank order; counts[r] is how many rank r gives.
  std::vector<float> all_gather(std::span<const float> mine, const std::vector<int64_t>& counts) const;
  void barrier() const;

  // Non-blocking sum in place: returns at once; the values are final after
  // wait_all(). MPI moves data only inside its calls, so call progress() now
  // and then while other work goes on. `what` names it in messages ("the
  // gradient sum of bucket 2 of 3").
  void start_sum(std::span<float> values, const std::string& what = "");
  // Non-blocking all-gather of byte strings of any length: after wait_all(),
  // `all` holds every rank's `mine` end to end in rank order and lengths[r]
  // the length of rank r's. `mine`, `all` and `lengths` must live until then.
  // Two collectives (the lengths, then the bytes); the queue keeps every
  // collective started after it behind it, so all processes start them in the
  // same order.
  void start_all_gather(std::span<const std::byte> mine, std::vector<std::byte>& all, std::vector<int64_t>& lengths,
                        const std::string& what = "");
  // Waits for every collective started with start_sum or start_all_gather.
  void wait_all();
  void progress();

  // The start. A job's first collective after start-up (whichever the
  // program makes first) is preceded by the start: every process says
  // whether it has come this far, checks done, to train. A process that ends
  // before its first collective (its flags were wrong, it printed --help)
  // calls stop_before_start instead, so that the others learn it at once
  // rather than wait for it until the deadline: their first collective then
  // throws StoppedBeforeStart, and every process can exit normally.
  //
  // Said once: until the start, a process of a job holds what it writes to
  // std::cerr (hold_stderr, called by run_main before the program's own code
  // runs). A ready process writes what it held when it takes part in the
  // start; one that stops carries it into the start instead, and the start's
  // all-gather of (state, text) lets rank 0 print each distinct text once:
  // unprefixed when every process had it (every rank got the same bad flag),
  // else with the ranks that had it. It also names the processes that
  // stopped quietly, whichever process that was.
  bool started() const { return started_; }
  // `failed`: this process said why on stderr (an error), rather than ending
  // without one (--help).
  void stop_before_start(bool failed);
  // Points std::cerr at a buffer until the start (or release_stderr); only
  // under a launcher with more than one process.
  void hold_stderr();
  // Points std::cerr back and returns what it held (empty when not holding).
  std::string release_stderr();

  // Ends the whole job: every process exits with `code`. Never returns.
  [[noreturn]] void abort(int code) const;

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

 private:
  ProcessGroup();
  ~ProcessGroup();

  int rank_ = 0;
  int size_ = 1;
  bool mpi_ = false;  // MPI was initialised by us (its handles live in process_group.cpp)
  std::vector<std::string> hosts_{"this host"};
  double deadline_seconds_ = kDefaultDeadlineSeconds;
  // Takes part in the start if this process has not yet: as ready (kReady),
  // or stopping (kStopped, kFailed). Every collective calls it first.
  enum StartState : int { kReady = 0, kStopped = 1, kFailed = 2 };
  void take_part_in_start(StartState state) const;
  std::vector<std::string> gather_texts(const std::string& text, const std::string& what) const;
  void join_start() const {
    if (!started_) take_part_in_start(kReady);
  }

  mutable bool started_ = true;
  struct Held;                 // std::cerr's own buffer and the one it writes to meanwhile
  mutable Held* held_ = nullptr;  // true during start-up (the host names), then false until the start
};

// Thrown by a process's first collective when another process of the job
// stopped before the start. Rank 0 has printed, in the start, every message
// of the processes that stopped and named those that ended quietly: the
// message is for the program, not for printing.
struct StoppedBeforeStart : Error {
  using Error::Error;
};

// An error that every process of a job finds alike, from the same gathered
// data (the settings of every rank differ from rank 0's): rank 0 prints it,
// once, and every process ends with it without aborting the others.
struct ErrorOnEveryRank : Error {
  using Error::Error;
};

// How many processes the MPI launcher that started this one started (from its
// environment); 1 when none did.
int launched_processes();
// How many of them run on this machine (OMPI_COMM_WORLD_LOCAL_SIZE); 1 when not launched.
int local_processes();

}  // namespace rg::dist
