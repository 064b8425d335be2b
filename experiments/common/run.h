#pragma once
// The run: the run directory and its logs, and the entry point, the same for
// every experiment driver (its flags are flags.h's). A driver builds a Run from its flags and hands it to
// its Trainer (trainer.h), which writes the logs below:
//
//   int train(int argc, char** argv) {
//     CifarConfig cfg;                                // the driver's settings, cfg.run among them
//     CLI::App app{"CIFAR-10, ConvPool-CNN-C"};
//     add_cifar_flags(app, cfg);                      // add_run_options first, then the driver's own
//     if (auto exit_code = rg::parse_flags(app, argc, argv)) return *exit_code;
//     rg::Run run(app, cfg.run);                      // prints and checks every setting
//     <data, model, optimizer>;
//     rg::Trainer trainer(run, model, adam, cfg.training);
//     <the training loop: trainer.h>
//     return 0;
//   }
//   int main(int argc, char** argv) { return rg::run_main(argc, argv, train); }
//
// The run directory (--out) holds
//   config.json    every flag → its value, numbers and booleans typed
//   metrics.jsonl  one JSON object per line, flushed at once:
//                  {"step", "split": "train"|"valid"|"test", "loss", "time_sec", <extra fields>},
//                  train lines also "sec_per_1k_steps" (null when no step has passed).
//                  time_sec is training time: wall clock minus pause_clock() scopes,
//                  carried on across resumes.
//   train.log      the same events (and notes) as fixed-width text, also echoed to stdout.
//
// Nothing in --out changes until training begins: the constructor only
// checks that files can be written there, takes the lock (below), and keeps
// its header lines (and any note before begin_training) in memory. begin_training writes config.json,
// opens train.log with the lines so far, and starts metrics.jsonl. A driver
// that stops with an error before that — a bad --data file, a checkpoint that
// does not load — leaves an earlier run's files exactly as they were. (A Run
// destroyed without an error before training, as in a test, saves its files.)
//
// One run at a time: a Run holds a lock on <out>/.lock (with its pid in it)
// for its life; a second run into the same --out is refused, naming the pid.
//
// A fresh run into an --out that holds a run (config.json, metrics.jsonl,
// train.log or a checkpoint) is refused: --resume continues that run, and
// --overwrite starts afresh after moving every file of the earlier run into
// <out>/replaced-<UTC time>/ (at begin_training, so nothing is moved when the
// start fails). Files are written whole through a temporary file and a
// rename, or appended to; a symbolic link in the run directory is never
// written through.
//
// Resuming (--resume): the settings are compared with the run's config.json.
// Any difference in a setting that changes what is trained (the model, the
// norm, the data, the batch, the seed, the learning rate) is refused with the
// list of differences, unless --resume-with-changes; the others
// (may_change_on_resume: threads, --steps, the log and evaluation cadence, …)
// are noted, and config.json records every change with the step it took
// effect at ("changes_on_resume"). train.log is appended to. metrics.jsonl is
// never emptied: begin_training(S) keeps every line with step ≤ S, drops the
// lines with step > S (the run had got further than its last checkpoint, and
// those steps are about to be trained and logged again) and any torn, non-JSON
// line from a crash, and appends from there.
//
// Errors: bad flags print one "error: ..." line and exit with 2; an rg::Error
// from anywhere in the driver (an unusable --out, a NaN loss, a bad
// checkpoint) prints one "error: <message>" line through run_main and exits
// with 1.
//
// Under mpirun (dist/process_group.h) only rank 0 touches the run directory
// and prints; every rank must have the same settings (the first that differs
// is an error on all of them); --threads 0 splits the machine's cores among
// the processes on it; and run_main turns an error on any rank into
// "error: rank r of N: <message>" and the end of the whole job.
#include <CLI/CLI.hpp>

#include "rmsgrad/core/tensor.h"
#include "rmsgrad/experiments/common/flags.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace rg {

// Runs a program's body; an exception's message becomes one "error: ..." line
// on stderr and exit code 1. The body returns an exit code or nothing (0).
// (A driver's main is run_main, below, which also ends an MPI job.)
int print_error(const char* message);  // prints "error: <message>", returns 1
inline constexpr const char* kOutOfMemory =
    "out of memory: an allocation failed (a size too large for this machine: a flag, or a line or file of the "
    "data, asks for more than there is)";
template <class Body>
int report_errors(Body&& body) {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
      body();
      return 0;
    } else {
      return body();
    }
  } catch (const std::bad_alloc&) {
    return print_error(kOutOfMemory);
  } catch (const std::exception& e) {
    return print_error(e.what());
  }
}

// Every driver's main: `int main(int argc, char** argv) { return rg::run_main(argc, argv, train); }`.
// An exception becomes one "error: ..." line and exit code 1; under mpirun
// it is "error: rank r of N: ..." and ends every process of the job, so that
// none waits for the failed one in a collective.
int run_main(int argc, char** argv, int (*train)(int argc, char** argv));

// What a process read, for Run::check_same_data: what it is, how many, and a
// hash of every value in it.
struct DataFingerprint {
  std::string name;  // "training images"
  int64_t count = 0;
  uint64_t hash = 0;
};
uint64_t content_hash(const Tensor& values);
uint64_t content_hash(const std::vector<std::vector<int32_t>>& sequences);
uint64_t content_hash(const std::vector<int32_t>& values);

class Run {
 public:
  using Fields = std::vector<std::pair<std::string, double>>;  // extra metrics, by name

  // Creates the run directory, sets the thread count and prints every
  // setting (config.json and the logs are written from begin_training on).
  // Throws rg::Error naming the path when the directory cannot be created or
  // written.
  Run(const CLI::App& app, const RunOptions& options);
  // A run of a program without flags of its own: its settings are `options`.
  explicit Run(const RunOptions& options);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::string path(std::string_view file_name) const;  // <out>/<file_name>
  bool resuming() const { return resuming_; }
  int64_t log_every() const { return log_every_; }  // --log-every: steps between train lines
  const std::string& settings_json() const { return settings_json_; }  // config.json's text

  // Called once, right before the training loop, with the step training starts
  // from: 0, or the step of the checkpoint being resumed. Starts the clock.
  void begin_training(int64_t step);

  // Under mpirun, every process must read the same data: what each read is
  // compared with rank 0's, and the first difference is an error on every
  // process (different sizes would give different step counts, and one
  // process would wait for another in a collective forever; the same sizes
  // of other data would train silently on something else). Call it on every
  // process; it does nothing for one.
  void check_same_data(const std::vector<DataFingerprint>& data) const;

  void log_train(int64_t step, double loss, const Fields& extra = {});
  void log_eval(std::string_view split, int64_t step, double loss, const Fields& extra = {});
  void note(std::string_view message);  // a free-form line in train.log and on stdout

  // While a ClockPause lives, time does not count as training time.
  class ClockPause {
   public:
    explicit ClockPause(Run& run);
    ~ClockPause();
    ClockPause(const ClockPause&) = delete;
    ClockPause& operator=(const ClockPause&) = delete;

   private:
    Run& run_;
  };
  [[nodiscard]] ClockPause pause_clock() { return ClockPause(*this); }
  double train_seconds() const;  // training time so far, including earlier runs when resumed

 private:
  using Clock = std::chrono::steady_clock;
  void write_line(const std::string& text, bool timestamp = true);  // train.log + stdout
  void write_metrics(const std::string& json_line);
  void require_training_begun(const char* what) const;
  void keep_metrics_up_to(int64_t step);
  void open_files();  // config.json, train.log (with the pending lines), metrics.jsonl
  void lock_directory();
  void move_earlier_run_aside();
  // The settings that differ from the resumed run's config.json, noted; an
  // error listing those that change what is trained, unless allowed.
  void compare_with_resumed_run(const std::string& saved_config, bool allow_changes);

  std::filesystem::path dir_;
  bool resuming_ = false;
  int64_t log_every_ = 100;
  std::string settings_json_;
  std::ofstream log_;
  std::ofstream metrics_;
  Clock::time_point created_;
  bool training_begun_ = false;
  Clock::time_point clock_start_;
  double carried_seconds_ = 0;  // training time of the run before it was resumed
  double paused_seconds_ = 0;
  int pause_depth_ = 0;
  Clock::time_point pause_start_;
  int64_t last_train_step_ = 0;
  double last_train_seconds_ = 0;
  int uncaught_at_creation_ = 0;
  bool replacing_ = false;                 // a fresh run over an earlier run (--overwrite)
  struct LockFile {                        // <out>/.lock, held while the run lives (also when
    int fd = -1;                           // its constructor throws: members are destroyed then)
    ~LockFile();
  } lock_;
  std::string saved_config_;               // the resumed run's config.json
  std::string changes_json_;               // this resume's changed settings, {"flag": [old, new]}
  int64_t begin_step_ = 0;                 // the step training began at
  bool files_open_ = false;                // open_files has run
  bool writer_ = true;                     // rank 0 of a data-parallel job (or the only process) writes
  std::vector<std::string> pending_lines_;  // train.log lines from before open_files
};

}  // namespace rg
