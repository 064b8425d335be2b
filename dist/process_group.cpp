#include "rmsgrad/dist/process_group.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rmsgrad/core/error.h"

#ifdef RG_HAVE_MPI
#include <mpi.h>
#endif

namespace rg::dist {

namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// OpenMPI's mpirun, MPICH's hydra and Slurm's PMI say how many processes
// they started; PMIx (Slurm, OpenMPI 5) gives at least a rank.
bool started_by_launcher() { return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK"); }

#ifdef RG_HAVE_MPI
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A collective this process started and has not yet seen finish.
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  int64_t number = 0;  // this process's count of collectives, from 1
  std::string what;    // "the broadcast of 10 floats from rank 0", for messages
};

// Where a process is, as it answers another's question: the collective it
// waits in (number 0: none). Sent as bytes.
struct Whereabouts {
  int64_t number = 0;
  char what[120] = {};
};

constexpr int kQuestionTag = 1, kAnswerTag = 2;

// A non-blocking collective in the queue. MPI requires every process to
// start the same collectives in the same order; the queue keeps that order
// when one stage needs an earlier stage's result before it can start (an
// all-gather of byte strings needs every rank's length before the bytes):
// such a stage waits until its predecessor has finished, and every collective
// behind it, blocking ones included, waits to be started.
struct Queued {
  Pending pending;
  std::function<void(MPI_Request*)> start;  // makes the MPI call
  bool after_previous = false;              // needs the previous stage's result
  bool started = false;
};

// The MPI state behind the process group: a second communicator for the
// questions about whereabouts (apart from the collectives, which they must not
// disturb), the count of collectives, and the non-blocking collectives queued
// or started and not yet waited for.
struct Job {
  MPI_Comm side = MPI_COMM_NULL;
  int64_t collectives = 0;
  std::deque<Queued> queue;
  std::vector<std::unique_ptr<Whereabouts>> answers_sent;  // kept until exit: MPI may still be sending them
};
Job& job() {
  static Job state;
  return state;
}

// Answers every question that has come in: "I am waiting in `here`".
void answer_questions(const Pending& here) {
  Job& j = job();
  for (;;) {
    int asked = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kQuestionTag, j.side, &asked, &status);
    if (!asked) return;
    int64_t their_number = 0;
    MPI_Recv(&their_number, 1, MPI_INT64_T, status.MPI_SOURCE, kQuestionTag, j.side, MPI_STATUS_IGNORE);
    auto answer = std::make_unique<Whereabouts>();
    answer->number = here.number;
    std::snprintf(answer->what, sizeof answer->what, "%s", here.what.c_str());
    MPI_Request request;
    MPI_Isend(answer.get(), sizeof(Whereabouts), MPI_BYTE, status.MPI_SOURCE, kAnswerTag, j.side, &request);
    MPI_Request_free(&request);
    j.answers_sent.push_back(std::move(answer));
  }
}

// Past the deadline in `stuck`: asks every other process where it is, waits
// kAnswerSeconds for the answers (answering questions meanwhile), and throws
// the error that says who had not arrived.
[[noreturn]] void give_up(const ProcessGroup& group, const Pending& stuck, double waited) {
  Job& j = job();
  const int n = group.size();
  std::vector<Whereabouts> answers(static_cast<size_t>(n));
  std::vector<MPI_Request> listening(static_cast<size_t>(n), MPI_REQUEST_NULL);
  static int64_t question;  // outlives this call: MPI may still be sending it when the job ends
  question = stuck.number;
  for (int r = 0; r < n; ++r) {
    if (r == group.rank()) continue;
    MPI_Request asking;
    MPI_Isend(&question, 1, MPI_INT64_T, r, kQuestionTag, j.side, &asking);
    MPI_Request_free(&asking);
    MPI_Irecv(&answers[r], sizeof(Whereabouts), MPI_BYTE, r, kAnswerTag, j.side, &listening[r]);
  }
  std::vector<bool> answered(static_cast<size_t>(n), false);
  const auto asked_at = std::chrono::steady_clock::now();
  while (seconds_since(asked_at) < ProcessGroup::kAnswerSeconds) {
    bool all = true;
    for (int r = 0; r < n; ++r) {
      if (r == group.rank() || answered[r]) continue;
      int done = 0;
      MPI_Test(&listening[r], &done, MPI_STATUS_IGNORE);
      answered[r] = done != 0;
      all = all && answered[r];
    }
    if (all) break;
    answer_questions(stuck);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (MPI_Request& request : listening)  // no late answer may land in `answers` once it is gone
    if (request != MPI_REQUEST_NULL) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
  // A rank that answers from the same collective has arrived; one that
  // answers from a later one has passed it (a broadcast's root finishes
  // early). The rest have not arrived.
  std::string missing;
  for (int r = 0; r < n; ++r) {
    if (r == group.rank()) continue;
    const std::string where =
        answered[r] ? std::string(answers[r].what, strnlen(answers[r].what, sizeof answers[r].what)) : "";
    if (answered[r] && (answers[r].number > stuck.number || (answers[r].number == stuck.number && where == stuck.what)))
      continue;
    missing += (missing.empty() ? " Not arrived: " : "; ") + group.describe(r);
    if (!answered[r])
      missing += fmt::format(", which did not answer within {:g} s (busy outside any collective, hung, or its host "
                             "unreachable)",
                             ProcessGroup::kAnswerSeconds);
    else if (answers[r].number == stuck.number)
      missing += fmt::format(", which waits in another collective of the same number, {}: the processes took "
                             "different branches",
                             where);
    else
      missing += fmt::format(", which waits in its collective #{}, {}", answers[r].number, where);
  }
  throw Error(fmt::format("{} has waited {:.0f} s (collective #{} of this process), past the deadline of {:g} s "
                          "(the drivers' --collective-deadline, in minutes).{}",
                          stuck.what, waited, stuck.number, group.deadline(),
                          missing.empty() ? " Every rank has arrived, yet it has not finished: the network between them "
                                            "fails, or is too slow for the deadline."
                                          : missing));
}

// Waits for a collective, polling (which is how MPI moves its data),
// answering other processes' questions, and giving up past the group's
// deadline.
void await(const ProcessGroup& group, Pending& pending) {
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t poll = 1;; ++poll) {
    int done = 0;
    MPI_Test(&pending.request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (poll % 64 == 0) {
      answer_questions(pending);
      const double waited = seconds_since(start);
      if (group.deadline() > 0 && waited > group.deadline()) give_up(group, pending, waited);
      std::this_thread::yield();
    }
  }
}

// A finished request is null, and MPI_Test on it says done at once.
bool finished(Queued& op) {
  if (!op.started) return false;
  int done = 0;
  MPI_Test(&op.pending.request, &done, MPI_STATUS_IGNORE);
  return done != 0;
}

// Starts the queued collectives in order, as far as none waits for its
// predecessor's result; returns the index of the first one not started.
size_t start_queued() {
  std::deque<Queued>& queue = job().queue;
  for (size_t i = 0; i < queue.size(); ++i) {
    Queued& op = queue[i];
    if (op.started) continue;
    if (op.after_previous && i > 0 && !finished(queue[i - 1])) return i;
    try {
      op.start(&op.pending.request);
    } catch (...) {
      // None of the rest can start in order now, and their buffers may not
      // outlive the error: they are dropped (the job ends on the error).
      queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(i), queue.end());
      throw;
    }
    op.started = true;
  }
  return queue.size();
}

// Starts every queued collective, waiting where a stage needs its predecessor's result.
void start_all_queued(const ProcessGroup& group) {
  std::deque<Queued>& queue = job().queue;
  for (size_t i; (i = start_queued()) < queue.size();) await(group, queue[i - 1].pending);
}

// A blocking collective about to start: everything queued goes first.
Pending next_collective(const ProcessGroup& group, std::string what) {
  start_all_queued(group);
  return Pending{MPI_REQUEST_NULL, ++job().collectives, std::move(what)};
}

void enqueue(std::string what, std::function<void(MPI_Request*)> start, bool after_previous = false) {
  job().queue.push_back(Queued{Pending{MPI_REQUEST_NULL, ++job().collectives, std::move(what)}, std::move(start),
                               after_previous});
  start_queued();
}

// MPI counts in int; a long buffer goes in pieces.
template <class Call>
void in_chunks(size_t count, Call&& call) {
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min<size_t>(count - done, INT_MAX));
    call(done, n);
    done += static_cast<size_t>(n);
  }
}

template <class T>
void sum_in_place(const ProcessGroup& group, std::span<T> values, MPI_Datatype type) {
  in_chunks(values.size(), [&](size_t at, int n) {
    Pending sum = next_collective(group, fmt::format("the sum of {} value{}", n, n == 1 ? "" : "s"));
    MPI_Iallreduce(MPI_IN_PLACE, values.data() + at, n, type, MPI_SUM, MPI_COMM_WORLD, &sum.request);
    await(group, sum);
  });
}
#endif

}  // namespace

namespace {
// The first of these variables that is set, as a count of at least 1; 1 if none is.
int count_from_env(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* value = env(name)) return std::max(1, std::atoi(value));
  return 1;
}
}  // namespace

int launched_processes() { return count_from_env({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}); }

int local_processes() { return count_from_env({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}); }

ProcessGroup& ProcessGroup::world() {
  static ProcessGroup group;
  return group;
}

ProcessGroup::ProcessGroup() {
#ifdef RG_HAVE_MPI
  if (!started_by_launcher()) return;
  // A peer that dies closes its TCP connections; writing to one must fail the
  // write (and MPI then ends the job, naming the peer), not kill this process
  // with SIGPIPE, which would make the launcher report this rank as the one
  // that failed.
  std::signal(SIGPIPE, SIG_IGN);
  // The non-blocking sums run on OpenMPI's libnbc, which below 4 processes
  // reduces to one rank and broadcasts back: the whole buffer crosses the
  // link twice, one way after the other, twice a ring's time (measured on two
  // hosts: 553 against 282 ms for 32 MiB on 1 Gbit/s). From 4 processes on it
  // takes the ring for large buffers itself. A user's own choice stands.
  if (launched_processes() < 4) setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  mpi_ = true;
  check(provided >= MPI_THREAD_FUNNELED, "MPI: the library gives thread level {}, training needs MPI_THREAD_FUNNELED",
        provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &job().side);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  hosts_ = all_gather(std::string(name, static_cast<size_t>(length)));
  started_ = false;  // the next collective, whichever it is, begins with the start
#else
  check(launched_processes() == 1,
        "this build has no MPI (install libopenmpi-dev and rebuild), so it cannot be one of the {} processes "
        "its launcher started; each would train alone",
        launched_processes());
#endif
}

ProcessGroup::~ProcessGroup() {
  if (std::string held = release_stderr(); !held.empty()) std::cerr << held << std::flush;
#ifdef RG_HAVE_MPI
  if (!mpi_) return;
  if (job().side != MPI_COMM_NULL) MPI_Comm_free(&job().side);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
#endif
}

void ProcessGroup::sum(std::span<float> values) const {
#ifdef RG_HAVE_MPI
  join_start();
  if (distributed()) sum_in_place(*this, values, MPI_FLOAT);
#else
  (void)values;
#endif
}

void ProcessGroup::sum(std::span<double> values) const {
#ifdef RG_HAVE_MPI
  join_start();
  if (distributed()) sum_in_place(*this, values, MPI_DOUBLE);
#else
  (void)values;
#endif
}

double ProcessGroup::sum(double value) const {
  sum(std::span<double>(&value, 1));
  return value;
}

void ProcessGroup::broadcast(std::span<float> values, int root) const {
#ifdef RG_HAVE_MPI
  if (!distributed()) return;
  join_start();
  in_chunks(values.size(), [&](size_t at, int n) {
    Pending bcast = next_collective(*this, fmt::format("the broadcast of {} floats from rank {}", n, root));
    MPI_Ibcast(values.data() + at, n, MPI_FLOAT, root, MPI_COMM_WORLD, &bcast.request);
    await(*this, bcast);
  });
#else
  (void)values, (void)root;
#endif
}

std::string ProcessGroup::broadcast(const std::string& text, int root) const {
  std::string out = text;
#ifdef RG_HAVE_MPI
  if (!distributed()) return out;
  join_start();
  uint64_t length = out.size();
  Pending size = next_collective(*this, fmt::format("the broadcast of a text's length from rank {}", root));
  MPI_Ibcast(&length, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &size.request);
  await(*this, size);
  out.resize(length);
  in_chunks(length, [&](size_t at, int n) {
    Pending text = next_collective(*this, fmt::format("the broadcast of a text of {} bytes from rank {}", n, root));
    MPI_Ibcast(out.data() + at, n, MPI_CHAR, root, MPI_COMM_WORLD, &text.request);
    await(*this, text);
  });
#else
  (void)root;
#endif
  return out;
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) const {
  join_start();
  return gather_texts(text, "");
}

// `what` names both stages in messages; empty: "the gathering of every rank's text".
std::vector<std::string> ProcessGroup::gather_texts(const std::string& text, const std::string& what) const {
#ifdef RG_HAVE_MPI
  if (distributed()) {
    check(text.size() <= INT_MAX, "MPI: all_gather of {} bytes", text.size());
    const int mine = static_cast<int>(text.size());
    std::vector<int> lengths(size_), offsets(size_);
    Pending sizes =
        next_collective(*this, what.empty() ? "the gathering of every rank's text length" : what + " (the lengths)");
    MPI_Iallgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, &sizes.request);
    await(*this, sizes);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      check(total <= INT_MAX, "MPI: all_gather of more than 2 GB");
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    Pending texts = next_collective(
        *this, what.empty() ? fmt::format("the gathering of every rank's text ({} bytes in all)", total) : what);
    MPI_Iallgatherv(text.data(), mine, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD,
                    &texts.request);
    await(*this, texts);
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
    return out;
  }
#endif
  return {text};
}

std::vector<float> ProcessGroup::all_gather(std::span<const float> mine, const std::vector<int64_t>& counts) const {
  check(static_cast<int>(counts.size()) == size_ && counts[rank_] == static_cast<int64_t>(mine.size()),
        "ProcessGroup::all_gather: {} counts for {} ranks, and {} values where rank {} should give {}", counts.size(),
        size_, mine.size(), rank_, counts.size() == static_cast<size_t>(size_) ? counts[rank_] : -1);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<float> all(static_cast<size_t>(total));
#ifdef RG_HAVE_MPI
  if (distributed()) {
    join_start();
    check(total <= INT_MAX, "MPI: all_gather of {} values", total);
    std::vector<int> ints(counts.begin(), counts.end()), offsets(size_, 0);
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + ints[r - 1];
    Pending values = next_collective(*this, fmt::format("the gathering of every rank's values ({} in all)", total));
    MPI_Iallgatherv(mine.data(), ints[rank_], MPI_FLOAT, all.data(), ints.data(), offsets.data(), MPI_FLOAT,
                    MPI_COMM_WORLD, &values.request);
    await(*this, values);
    return all;
  }
#endif
  std::copy(mine.begin(), mine.end(), all.begin());
  return all;
}

void ProcessGroup::barrier() const {
#ifdef RG_HAVE_MPI
  if (!distributed()) return;
  join_start();
  Pending barrier = next_collective(*this, "a barrier");
  MPI_Ibarrier(MPI_COMM_WORLD, &barrier.request);
  await(*this, barrier);
#endif
}

void ProcessGroup::start_sum(std::span<float> values, const std::string& what) {
#ifdef RG_HAVE_MPI
  if (!distributed()) return;
  join_start();
  check(values.size() <= INT_MAX, "MPI: a non-blocking sum of {} values; use buckets under 2^31", values.size());
  enqueue(what.empty() ? fmt::format("the sum of {} values", values.size()) : what, [values](MPI_Request* request) {
    MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   request);
  });
#else
  (void)values, (void)what;
#endif
}

void ProcessGroup::start_all_gather(std::span<const std::byte> mine, std::vector<std::byte>& all,
                                    std::vector<int64_t>& lengths, const std::string& what) {
  if (!distributed()) {
    all.assign(mine.begin(), mine.end());
    lengths.assign(1, static_cast<int64_t>(mine.size()));
    return;
  }
#ifdef RG_HAVE_MPI
  join_start();
  check(mine.size() <= INT_MAX, "MPI: a non-blocking all-gather of {} bytes from one rank", mine.size());
  struct Counts {
    int mine = 0;
    std::vector<int> lengths, offsets;
  };
  auto counts = std::make_shared<Counts>(Counts{static_cast<int>(mine.size()), std::vector<int>(size_),
                                                std::vector<int>(size_)});
  const std::string name = what.empty() ? fmt::format("the all-gather of {} bytes", mine.size()) : what;
  enqueue(name + ": every rank's length", [counts](MPI_Request* request) {
    MPI_Iallgather(&counts->mine, 1, MPI_INT, counts->lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, request);
  });
  const int ranks = size_;
  enqueue(
      name,
      [counts, mine, &all, &lengths, ranks](MPI_Request* request) {
        int64_t total = 0;
        lengths.assign(counts->lengths.begin(), counts->lengths.end());
        for (int r = 0; r < ranks; ++r) {
          check(total <= INT_MAX, "MPI: an all-gather of more than 2 GB");
          counts->offsets[r] = static_cast<int>(total);
          total += counts->lengths[r];
        }
        check(total <= INT_MAX, "MPI: an all-gather of {} bytes", total);
        all.resize(static_cast<size_t>(total));
        MPI_Iallgatherv(mine.data(), counts->mine, MPI_BYTE, all.data(), counts->lengths.data(), counts->offsets.data(),
                        MPI_BYTE, MPI_COMM_WORLD, request);
      },
      /*after_previous=*/true);
#else
  (void)what;
#endif
}

void ProcessGroup::wait_all() {
#ifdef RG_HAVE_MPI
  start_all_queued(*this);
  std::deque<Queued>& queue = job().queue;
  for (Queued& op : queue) await(*this, op.pending);
  queue.clear();
#endif
}

void ProcessGroup::progress() {
#ifdef RG_HAVE_MPI
  // A test of one open request moves every request on.
  for (Queued& op : job().queue)
    if (!finished(op)) break;
  start_queued();  // a stage whose predecessor has just finished
#endif
}

struct ProcessGroup::Held {
  std::streambuf* cerr_own = nullptr;
  std::stringbuf buffer;
};

void ProcessGroup::hold_stderr() {
  if (!distributed() || started_ || held_) return;
  held_ = new Held;
  held_->cerr_own = std::cerr.rdbuf(&held_->buffer);
}

std::string ProcessGroup::release_stderr() {
  if (!held_) return {};
  std::cerr.rdbuf(held_->cerr_own);
  std::string text = held_->buffer.str();
  delete held_;
  held_ = nullptr;
  return text;
}

void ProcessGroup::stop_before_start(bool failed) {
  if (!started_) take_part_in_start(failed ? kFailed : kStopped);
  // Not distributed, or the start is over: what was held goes out now.
  if (std::string held = release_stderr(); !held.empty()) std::cerr << held << std::flush;
}

namespace {

// "rank 1 of 2 (host): " in front of each line of `text`; after "error: "
// where a line begins with it, so that a line of an error still starts so.
std::string prefixed(const std::string& text, const std::string& who) {
  std::string out;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    end = end == std::string::npos ? text.size() : end + 1;
    std::string line = text.substr(begin, end - begin);
    if (line.back() != '\n') line += '\n';
    const std::string error = "error: ";
    out += line.rfind(error, 0) == 0 ? error + who + ": " + line.substr(error.size()) : who + ": " + line;
    begin = end;
  }
  return out;
}

}  // namespace

// Every process gives its state and what it wrote to stderr meanwhile; all of
// them learn every other's. Rank 0 prints what the stopped ones wrote, once.
// A process that stops returns and exits; the ready ones throw if any other
// stopped.
void ProcessGroup::take_part_in_start(StartState state) const {
  started_ = true;
  std::string held = const_cast<ProcessGroup*>(this)->release_stderr();
  if (state == kReady && !held.empty()) {  // a ready process's own lines (warnings): its own to print
    std::cerr << held << std::flush;
    held.clear();
  }
#ifdef RG_HAVE_MPI
  if (!distributed()) return;
  const std::vector<std::string> all = gather_texts(
      std::string(1, static_cast<char>('0' + state)) + held,
      "the start (every process has read and checked its flags and settings)");
  std::vector<std::string> quiet;
  bool stopped = false, ready = false;
  for (int r = 0; r < size_; ++r) {
    const int its = all[r].empty() ? kFailed : all[r][0] - '0';
    stopped = stopped || its != kReady;
    ready = ready || its == kReady;
    if (its == kStopped) quiet.push_back(describe(r));
  }
  if (writer() && stopped) {
    // Each distinct text once, in the order of the first rank that wrote it.
    std::vector<bool> done(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      if (done[r] || all[r].size() <= 1) continue;
      const std::string text = all[r].substr(1);
      std::vector<std::string> who;
      for (int o = r; o < size_; ++o)
        if (!done[o] && all[o].size() > 1 && all[o].compare(1, std::string::npos, text) == 0) {
          done[o] = true;
          who.push_back(describe(o));
        }
      std::string out =
          static_cast<int>(who.size()) == size_ ? text : prefixed(text, fmt::format("{}", fmt::join(who, ", ")));
      if (out.back() != '\n') out += '\n';
      std::cerr << out << std::flush;  // one write
    }
    if (!quiet.empty() && ready)
      std::cerr << fmt::format("error: {} ended before training without an error (it printed its --help, or had "
                               "nothing to train); no process trained\n",
                               fmt::join(quiet, ", "))
                << std::flush;
  }
  if (state != kReady || !stopped) return;
  throw StoppedBeforeStart("another process of the job stopped before the start; rank 0 has said why");
#else
  (void)state;
#endif
}

void ProcessGroup::set_deadline(double seconds) {
  check(seconds >= 0, "ProcessGroup: a deadline of {} s; give 0 (none) or more", seconds);
  deadline_seconds_ = seconds;
}

std::string ProcessGroup::describe(int rank) const {
  return distributed() ? fmt::format("rank {} of {} ({})", rank, size_, host(rank)) : "the only process";
}

void ProcessGroup::abort(int code) const {
#ifdef RG_HAVE_MPI
  if (mpi_) {
    // MPI_Abort asks the launcher to end the job; a process whose host is cut
    // off from it would wait for an answer for ever, so it ends itself.
    std::thread([code] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::_Exit(code);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, code);
  }
#endif
  std::exit(code);
}

}  // namespace rg::dist
