#include "rmsgrad/dist/process_group.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <initializer_list>

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
// The non-blocking sums started and not yet waited for (MPI_REQUEST_NULL once done).
std::vector<MPI_Request>& requests() {
  static std::vector<MPI_Request> pending;
  return pending;
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
void sum_in_place(std::span<T> values, MPI_Datatype type) {
  in_chunks(values.size(), [&](size_t at, int n) {
    MPI_Allreduce(MPI_IN_PLACE, values.data() + at, n, type, MPI_SUM, MPI_COMM_WORLD);
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
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  mpi_ = true;
  check(provided >= MPI_THREAD_FUNNELED, "MPI: the library gives thread level {}, training needs MPI_THREAD_FUNNELED",
        provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
#else
  check(launched_processes() == 1,
        "this build has no MPI (install libopenmpi-dev and rebuild), so it cannot be one of the {} processes "
        "its launcher started; each would train alone",
        launched_processes());
#endif
}

ProcessGroup::~ProcessGroup() {
#ifdef RG_HAVE_MPI
  if (!mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
#endif
}

void ProcessGroup::sum(std::span<float> values) const {
#ifdef RG_HAVE_MPI
  if (distributed()) sum_in_place(values, MPI_FLOAT);
#else
  (void)values;
#endif
}

void ProcessGroup::sum(std::span<double> values) const {
#ifdef RG_HAVE_MPI
  if (distributed()) sum_in_place(values, MPI_DOUBLE);
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
  in_chunks(values.size(),
            [&](size_t at, int n) { MPI_Bcast(values.data() + at, n, MPI_FLOAT, root, MPI_COMM_WORLD); });
#else
  (void)values, (void)root;
#endif
}

std::string ProcessGroup::broadcast(const std::string& text, int root) const {
  std::string out = text;
#ifdef RG_HAVE_MPI
  if (!distributed()) return out;
  uint64_t length = out.size();
  MPI_Bcast(&length, 1, MPI_UINT64_T, root, MPI_COMM_WORLD);
  out.resize(length);
  in_chunks(length, [&](size_t at, int n) { MPI_Bcast(out.data() + at, n, MPI_CHAR, root, MPI_COMM_WORLD); });
#else
  (void)root;
#endif
  return out;
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) const {
#ifdef RG_HAVE_MPI
  if (distributed()) {
    check(text.size() <= INT_MAX, "MPI: all_gather of {} bytes", text.size());
    const int mine = static_cast<int>(text.size());
    std::vector<int> lengths(size_), offsets(size_);
    MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      check(total <= INT_MAX, "MPI: all_gather of more than 2 GB");
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(text.data(), mine, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
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
    check(total <= INT_MAX, "MPI: all_gather of {} values", total);
    std::vector<int> ints(counts.begin(), counts.end()), offsets(size_, 0);
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + ints[r - 1];
    MPI_Allgatherv(mine.data(), ints[rank_], MPI_FLOAT, all.data(), ints.data(), offsets.data(), MPI_FLOAT,
                   MPI_COMM_WORLD);
    return all;
  }
#endif
  std::copy(mine.begin(), mine.end(), all.begin());
  return all;
}

void ProcessGroup::barrier() const {
#ifdef RG_HAVE_MPI
  if (distributed()) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void ProcessGroup::start_sum(std::span<float> values) {
#ifdef RG_HAVE_MPI
  if (!distributed()) return;
  check(values.size() <= INT_MAX, "MPI: a non-blocking sum of {} values; use buckets under 2^31", values.size());
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                 &request);
  requests().push_back(request);
#else
  (void)values;
#endif
}

void ProcessGroup::wait_all() {
#ifdef RG_HAVE_MPI
  std::vector<MPI_Request>& pending = requests();
  if (pending.empty()) return;
  MPI_Waitall(static_cast<int>(pending.size()), pending.data(), MPI_STATUSES_IGNORE);
  pending.clear();
#endif
}

void ProcessGroup::progress() {
#ifdef RG_HAVE_MPI
  std::vector<MPI_Request>& pending = requests();
  if (pending.empty()) return;
  int done = 0;
  MPI_Testall(static_cast<int>(pending.size()), pending.data(), &done, MPI_STATUSES_IGNORE);
#endif
}

void ProcessGroup::abort(int code) const {
#ifdef RG_HAVE_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

}  // namespace rg::dist
