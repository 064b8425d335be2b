#pragma once
// The run: the run directory and its logs, and a program's entry point. A
// program builds a Run from its options and hands it to its Trainer
// (trainer.h), which writes the logs below:
//
//   int train(int argc, char** argv) {
//     rg::Run run({.out = "runs/quadrants", .log_every = 200});  // prints and checks every setting
//     <data, model, optimizer>;
//     rg::Trainer trainer(run, model, adam, {.steps = 600});
//     <the training loop: trainer.h>
//     return 0;
//   }
//   int main(int argc, char** argv) { return rg::run_main(argc, argv, train); }
//
// A run's settings are what config.json records, the header prints and
// --resume compares: by default the RunOptions themselves ("out", "seed",
// "log_every", ...); a program with settings of its own passes them all as
// RunSettings (the experiment drivers pass every command-line flag:
// experiments/common/flags.h's run_settings).
//
// The run directory (RunOptions::out) holds
//   config.json    every setting → its value, numbers and booleans typed
//   metrics.jsonl  one JSON object per line, flushed at once:
//                  {"step", "split": "train"|"valid"|"test", "loss", "time_sec", <extra fields>},
//                  train lines also "sec_per_1k_steps" (null when no step has passed).
//                  time_sec is training time: wall clock minus pause_clock() scopes,
//                  carried on across resumes.
//   train.log      the same events (and notes) as fixed-width text, also echoed to stdout.
//
// Nothing in --out changes until training begins (but for undoing an
// --overwrite that was killed mid-move, below): the constructor only
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
// A fresh run into an --out that holds a run (metrics.jsonl, train.log, a
// checkpoint, or a config.json a run wrote) is refused: --resume continues
// that run, and --overwrite starts afresh after moving the earlier run's
// files, and only those, into <out>/replaced-<UTC time>/ (at begin_training,
// so nothing is moved when the start fails; all or nothing, and a move cut
// short by a kill is undone by the next start). With --overwrite, a live run
// anywhere below --out and an input (RunOptions::inputs) inside it are
// refused; a config.json that is not a run's is never written over.
// replaced_run.h has the rules. Files are written whole through a temporary
// file and a rename, or appended to; a symbolic link in the run directory is
// never written through.
//
// Resuming (--resume): the settings are compared with the run's config.json.
// Any difference in a setting that changes what is trained (the model, the
// norm, the data, the batch, the seed, the learning rate) is refused with the
// list of differences, unless --resume-with-changes; the others
// (may_change_on_resume: threads, --steps, the log and evaluation cadence, …)
// are noted, and config.json records every change with the step it took
// effect at ("changes_on_resume"). train.log is appended to. metrics.jsonl is
// never emptied: begin_training(S) keeps every line with step ≤ S — but, when
// the checkpoint records how many lines there were when it was saved, none
// logged after that (the final test of a finished run, which is run again) —
// drops the lines after (the run had got further than its last checkpoint,
// and those steps are about to be trained and logged again) and a torn,
// non-JSON last line from a crash, and appends from there. A bad line
// anywhere else is damage, not a crash: the resume is refused, naming it.
//
// Errors: bad flags print one "error: ..." line and exit with 2; an rg::Error
// from anywhere in the driver (an unusable --out, a NaN loss, a bad
// checkpoint) prints one "error: <message>" line through run_main and exits
// with 1. A byte of a message that is not UTF-8 (a path's) and a control
// character (a newline in a path) are written as \xHH (core/escape_bytes.h),
// as config.json, the header and train.log write what is not UTF-8. A bad
// OMP_NUM_THREADS is such an error, from the constructor (core/parallel.h).
//
// Under mpirun (dist/process_group.h) only rank 0 touches the run directory
// and prints; every rank must have the same settings (the first that differs
// is an error on all of them); --threads 0 splits the machine's cores among
// the processes on it; and run_main turns an error on any rank into
// "error: rank r of N: <message>" and the end of the whole job.
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/tensor.h"

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

// A file or folder a run reads, by the flag that names it: {"--data", "data/cifar10"}.
struct RunInput {
  std::string flag;
  std::string path;
};

// The settings every run has.
struct RunOptions {
  uint64_t seed = 0;               // recorded with the run; the program seeds its generators with it
  // Threads for the library's loops and products: set_num_threads(threads)
  // when above 0 (a process-wide setting); 0 leaves the count as it is
  // (OMP_NUM_THREADS, else every core), divided among the processes of an
  // MPI job that share this machine.
  int threads = 0;
  std::string out = "runs/run";    // the run directory
  bool resume = false;             // continue the run in `out` from its checkpoint
  int64_t log_every = 100;         // steps between train lines
  bool overwrite = false;          // a fresh run into an `out` that holds a run moves that run aside
  bool resume_with_changes = false;  // resume may change settings that change what is trained
  // Under mpirun, when set: how long a process waits in any collective for
  // the others before it ends the job, naming the ranks that had not arrived
  // (dist/process_group.h's set_deadline, a setting of the process group),
  // in force from the Run's first collective, the start. 0: for ever. Unset:
  // the group's deadline as it is (kDefaultDeadlineSeconds).
  std::optional<double> collective_deadline_minutes = {};
  // What the run reads: none may be one of the run's files, and with
  // `overwrite` none may lie inside `out`.
  std::vector<RunInput> inputs = {};
  // Files the program writes into `out` besides Run's and the Trainer's
  // ("sample.txt"): a run's files too, moved aside with them by `overwrite`.
  std::vector<std::string> files = {};
};

// One setting of a run, as config.json keeps it.
struct Setting {
  std::string name;                   // "lr"
  std::string json;                   // its value as JSON text: 0.1, true, "rmsnorm", [1, 2], null;
                                      // JSON is UTF-8: a path (bytes) goes through escape_bytes (core/escape_bytes.h)
  bool may_change_on_resume = false;  // a change on resume is noted, not refused (threads, the log cadence)
};

// Every setting that makes a run what it is, and how the header names them.
struct RunSettings {
  std::string title = {};             // the header's first line ("CIFAR-10, ConvPool-CNN-C"); "" for none
  std::vector<Setting> settings = {};
  std::string name_prefix = "";       // how the header and the messages write a name: "--" for flags
  // The program, named in its checkpoints so that --resume refuses another
  // program's (the drivers: their binary's name, "cifar10"); "" for none.
  std::string program = {};
};
// The RunOptions as settings: what a Run made in code records and prints,
// named as their fields (".out", ".log_every").
RunSettings settings_of(const RunOptions& options);

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
    return print_error(error_message(e).c_str());  // a std::filesystem error in our words (core/error.h)
  }
}

// Every driver's main: `int main(int argc, char** argv) { return rg::run_main(argc, argv, train); }`.
// An exception becomes one "error: ..." line and exit code 1; under mpirun
// it is "error: rank r of N: ..." and ends every process of the job, so that
// none waits for the failed one in a collective. It ignores SIGPIPE (a closed
// stdout stops the printing, not the run) and SIGXFSZ (a file-size limit
// becomes a write error naming the file), for the whole process.
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

  // Creates the run directory, sets the thread count (RunOptions::threads)
  // and prints every setting (config.json and the logs are written from
  // begin_training on). Throws rg::Error naming the path when the directory
  // cannot be created or written. Without `settings` the run's settings are
  // its options (settings_of).
  explicit Run(const RunOptions& options);
  Run(const RunOptions& options, RunSettings settings);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::string path(std::string_view file_name) const;  // <out>/<file_name>
  bool resuming() const { return resuming_; }
  int64_t log_every() const { return log_every_; }  // --log-every: steps between train lines
  const std::string& settings_json() const { return settings_json_; }  // config.json's text
  // On resume, with the settings the checkpoint was trained with (its
  // "config"): when config.json records others (a resume with changes that
  // ended before its first checkpoint), the comparison is made again with
  // the checkpoint's, which are what was trained.
  void compare_with_checkpoint(const std::string& checkpoint_settings);
  const std::string& program() const { return program_; }  // RunSettings::program

  // Called once, right before the training loop, with the step training starts
  // from: 0, or the step of the checkpoint being resumed. Starts the clock.
  // On resume, `metrics_lines` is the count of metrics lines when the
  // checkpoint was saved (metrics_lines(), kept in it): the lines at the
  // checkpoint's step logged after it (the final test) are dropped too.
  void begin_training(int64_t step, std::optional<int64_t> metrics_lines = std::nullopt);
  // The lines in metrics.jsonl so far (those kept on resume and those written since).
  int64_t metrics_lines() const { return metrics_lines_; }

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
  // On resume, before any file is written: the lines of metrics.jsonl to
  // keep (kept_metrics_); a damaged line other than the last is an error.
  void read_metrics_up_to(int64_t step, std::optional<int64_t> lines);
  void check_run_files() const;  // no run file is a link, a FIFO or a folder
  void open_files();  // config.json, train.log (with the pending lines), metrics.jsonl
  void lock_directory();
  void move_earlier_run_aside();
  // The settings that differ from the resumed run's config.json, noted; an
  // error listing those that change what is trained, unless allowed.
  void compare_with_resumed_run(const std::string& saved_config, bool allow_changes);
  // "--lr"; the product library as its environment variable, RG_GEMM.
  std::string label(const std::string& name) const { return name == kGemmSetting ? name : name_prefix_ + name; }
  static constexpr const char* kGemmSetting = "RG_GEMM";

  std::filesystem::path dir_;
  bool resuming_ = false;
  bool allow_changes_ = false;  // --resume-with-changes
  int64_t log_every_ = 100;
  std::string settings_json_;
  std::string name_prefix_;
  std::string program_;
  std::vector<std::string> may_change_;    // the settings that may change on resume
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
  std::vector<std::string> replaced_files_;  // the earlier run's files, moved aside by --overwrite
  struct LockFile {                        // <out>/.lock, held while the run lives (also when
    int fd = -1;                           // its constructor throws: members are destroyed then)
    ~LockFile();
  } lock_;
  std::string saved_config_;               // the resumed run's config.json
  std::string changes_json_;               // this resume's changed settings, {"flag": [old, new]}
  int64_t begin_step_ = 0;                 // the step training began at
  bool files_open_ = false;                // open_files has run
  int64_t metrics_lines_ = 0;              // lines in metrics.jsonl
  std::optional<std::string> kept_metrics_;  // on resume: metrics.jsonl's lines to keep
  std::string metrics_note_;               // on resume: what was kept and dropped
  bool writer_ = true;                     // rank 0 of a data-parallel job (or the only process) writes
  std::vector<std::string> pending_lines_;  // train.log lines from before open_files
};

}  // namespace rg
