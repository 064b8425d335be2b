// The run: the run directory, config.json, metrics.jsonl and train.log (see
// run.h for the files and the resume policy); run_main.cpp has the drivers' entry point.
#include "rmsgrad/train/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iterator>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/train/progress.h"
#include "rmsgrad/train/replaced_run.h"

namespace rg {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // keeps the flags in the order --help lists them

namespace {

// A setting's value as the header shows it: a string bare, null as "-".
std::string display_setting(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.is_null() ? "-" : value.dump();
}

// A change of a setting, "0.1 -> 0.2"; as JSON text when the two look the
// same shown bare ("0.125" -> 0.125: a string and a number).
std::string display_change(const json& before, const json& after) {
  if (display_setting(before) == display_setting(after)) return fmt::format("{} -> {}", before.dump(), after.dump());
  return fmt::format("{} -> {}", display_setting(before), display_setting(after));
}

// Every process of a job must train the same thing: the first setting in
// which a rank differs from rank 0 is an error on every rank.
void check_same_settings(const dist::ProcessGroup& group, const json& settings) {
  const std::vector<std::string> all = group.all_gather(settings.dump());
  const json reference = json::parse(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    const json other = json::parse(all[r]);
    // Every rank gathered the same settings and finds the same difference.
    for (const auto& [name, value] : reference.items())
      if (!other.contains(name) || other[name] != value)
        throw dist::ErrorOnEveryRank(
            fmt::format("rank {} runs with --{} {}, rank 0 with {}; every process of a job needs the same settings",
                        r, name, other.contains(name) ? display_setting(other[name]) : "(none)",
                        display_setting(value)));
    for (const auto& [name, value] : other.items())
      if (!reference.contains(name))
        throw dist::ErrorOnEveryRank(fmt::format("rank {} has a setting --{} that rank 0 has not", r, name));
  }
}

}  // namespace

RunSettings settings_of(const RunOptions& options) {
  auto setting = [](const char* name, const json& value, bool may_change = false) {
    return Setting{.name = name, .json = value.dump(), .may_change_on_resume = may_change};
  };
  return {.settings = {setting("seed", options.seed), setting("threads", options.threads, true),
                       setting("out", escape_bytes(options.out)), setting("resume", options.resume),
                       setting("log_every", options.log_every, true), setting("overwrite", options.overwrite),
                       setting("resume_with_changes", options.resume_with_changes),
                       setting("collective_deadline_minutes",
                               options.collective_deadline_minutes ? json(*options.collective_deadline_minutes)
                                                                   : json(nullptr),
                               true)},
          .name_prefix = "."};
}

Run::Run(const RunOptions& options) : Run(options, settings_of(options)) {}

Run::Run(const RunOptions& options, RunSettings run_settings)
    : dir_(options.out), resuming_(options.resume), allow_changes_(options.resume_with_changes),
      log_every_(options.log_every),
      name_prefix_(std::move(run_settings.name_prefix)), program_(run_settings.program), created_(Clock::now()),
      uncaught_at_creation_(std::uncaught_exceptions()) {
  check(!options.out.empty(), "--out is empty; name a run directory");
  check(!(options.resume && options.overwrite), "--resume continues the run in --out and --overwrite moves it aside; "
        "give one of them");
  check(!options.resume_with_changes || options.resume, "--resume-with-changes goes with --resume");
  // A run directory of its own: never the root or a folder of the system's;
  // and a path the system can open (a longer one fails every call on it).
  {
    auto shown = [](const std::string& text) {  // a long path: its first 100 bytes, whole characters
      size_t end = std::min<size_t>(text.size(), 100);
      while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
      return end == text.size() ? text : text.substr(0, end) + "…";
    };
    for (const fs::path& part : fs::path(options.out))
      check(part.native().size() <= NAME_MAX, "--out '{}' is too long: its name '{}' has {} bytes, and this system "
            "allows {} for one name (NAME_MAX)", shown(options.out), shown(part.string()), part.native().size(),
            NAME_MAX);
    std::error_code ec;
    const fs::path absolute = fs::absolute(options.out, ec);
    check(!ec, "cannot resolve --out '{}': {}", shown(options.out), ec.message());
    check(absolute.native().size() < PATH_MAX, "--out '{}' is too long: {} bytes as an absolute path, and this "
          "system allows {} for a path (PATH_MAX)", shown(options.out), absolute.native().size(), PATH_MAX - 1);
    // A path that cannot be resolved (a loop of links, a folder without
    // permission) is left to creating the directory, which names the cause.
    const fs::path where = fs::weakly_canonical(absolute, ec);
    check(ec || where != where.root_path(), "--out '{}' is the filesystem's root; name a run directory", options.out);
    for (const char* system : {"/dev", "/proc", "/sys", "/boot", "/etc"})
      check(ec || (where != system && where.string().rfind(std::string(system) + "/", 0) != 0),
            "--out '{}' is in {}, a folder of the system's; name a run directory of your own", options.out, system);
  }
  {
    std::error_code ec;
    check(!options.resume || fs::is_directory(options.out, ec),
          "--resume: there is no run in '{}' ({}) to continue", options.out, ec ? ec.message() : "no such directory");
  }
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  if (options.collective_deadline_minutes) group.set_deadline(*options.collective_deadline_minutes * 60.0);
  writer_ = group.writer();
  check_omp_num_threads();
  if (options.threads > 0)
    set_num_threads(options.threads);
  else if (dist::local_processes() > 1)  // the cores are shared by the job's processes on this machine
    set_num_threads(std::max(1, num_threads() / dist::local_processes()));
  json settings = json::object();
  for (const Setting& setting : run_settings.settings) {
    json value = json::parse(setting.json, nullptr, /*allow_exceptions=*/false);
    check(!value.is_discarded(), "Run: the setting '{}' is not JSON: {}", setting.name, setting.json);
    check(!settings.contains(setting.name), "Run: two settings named '{}'", setting.name);
    settings[setting.name] = std::move(value);
    if (setting.may_change_on_resume) may_change_.push_back(setting.name);
  }
  // The product library is chosen by the environment (RG_GEMM), not a flag,
  // yet it changes the last bits of every step: it is recorded and compared
  // on resume like a setting. Asking for it here also refuses a bad RG_GEMM
  // before anything else is done.
  check(!settings.contains(kGemmSetting), "Run: a setting may not be named {}", kGemmSetting);
  settings[kGemmSetting] = std::string(gemm_library_name(gemm_library()));
  settings_json_ = settings.dump(2);
  if (group.distributed()) check_same_settings(group, settings);
  if (!writer_) return;  // only rank 0 touches the run directory and prints

  std::error_code ec;
  // A link to nowhere: create_directories would say only "File exists".
  if (fs::is_symlink(fs::symlink_status(dir_, ec)) && !fs::exists(dir_, ec)) {
    const fs::path target = fs::read_symlink(dir_, ec);
    throw Error(fmt::format("--out '{}' is a symbolic link to '{}', which does not exist; create that directory, "
                            "or choose another --out", options.out, target.string()));
  }
  fs::create_directories(dir_, ec);
  check(!ec, "cannot create the run directory '{}': {}", dir_.string(), ec.message());
  check(fs::is_directory(dir_, ec), "cannot use '{}' as the run directory: it exists and is not a directory",
        dir_.string());

  // Nothing in the directory is changed yet (see run.h): only check that
  // files can be created in it (never through a link left at the probe's name).
  const fs::path probe = dir_ / fmt::format(".write-test-{}", ::getpid());
  ::unlink(probe.c_str());
  const int test = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  check(test >= 0, "cannot write in the run directory '{}': {}", dir_.string(), std::strerror(errno));
  ::close(test);
  fs::remove(probe, ec);
  lock_directory();

  // A fresh run never mixes its files with an earlier run's: refused, or
  // (--overwrite) the earlier run's files are moved aside when training
  // begins (replaced_run.h). An --overwrite killed mid-move is undone first.
  const std::vector<std::string> put_back = undo_interrupted_move(dir_);
  std::vector<std::string> names;
  for (const auto& [name, value] : settings.items()) names.push_back(name);
  const bool has_checkpoint = fs::exists(fs::symlink_status(path("checkpoint.safetensors"), ec));
  if (!resuming_) {
    replaced_files_ = earlier_run_files(dir_, options.files, names);
    check(replaced_files_.empty() || options.overwrite || !has_checkpoint, "--out '{}' holds a run ({}): --resume "
          "continues it, --overwrite moves its files into {}/replaced-<time>/ and starts afresh, or choose another "
          "--out", dir_.string(), fmt::join(replaced_files_, ", "), dir_.string());
    check(replaced_files_.empty() || options.overwrite, "--out '{}' holds a run ({}) that stopped before its first "
          "checkpoint, so --resume has nothing to continue: --overwrite moves its files into {}/replaced-<time>/ and "
          "starts afresh, or choose another --out", dir_.string(), fmt::join(replaced_files_, ", "), dir_.string());
    if (!replaced_files_.empty()) refuse_live_runs_below(dir_);
  }
  refuse_inputs_inside(dir_, options.inputs, options.files, options.overwrite);
  // A config.json someone else wrote, and no file only a run writes: there is no run here.
  const bool run_files = std::any_of(std::begin(kRunFiles) + 1, std::end(kRunFiles), [&](const char* name) {
    return fs::exists(fs::symlink_status(path(name), ec));
  });
  check(!resuming_ || run_files || !fs::exists(fs::symlink_status(path("config.json"), ec)) ||
        is_run_config(path("config.json"), names, false), "--resume: there is no run in '{}' to continue: it holds no "
        "checkpoint, and its config.json is not a run's (not a JSON object with this run's settings)", dir_.string());
  if (resuming_ && fs::is_regular_file(path("config.json"), ec)) {
    std::ifstream in(path("config.json"));
    saved_config_ = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // The header: every setting, fixed-width, written as one block (one write
  // to the terminal and the log, not one per line).
  size_t width = 0;
  for (const auto& [name, value] : settings.items()) width = std::max(width, label(name).size());
  std::string header;
  if (!run_settings.title.empty()) header += run_settings.title + '\n';
  header += fmt::format("{:<{}}  {} ({})\n", "run", width, dir_.string(), resuming_ ? "resuming" : "fresh");
  header += fmt::format("{:<{}}  {}", "threads", width, num_threads());
  if (group.distributed())
    header += fmt::format("\n{:<{}}  {} (data-parallel over MPI; --batch is the global batch)", "processes", width,
                          group.size());
  for (const auto& [name, value] : settings.items())
    header += fmt::format("\n{:<{}}  {}", label(name), width, display_setting(value));
  write_line(header, false);
  if (!put_back.empty())
    note(fmt::format("an --overwrite was killed while moving the earlier run aside; put back {}",
                     fmt::join(put_back, ", ")));
  if (resuming_) compare_with_resumed_run(saved_config_, allow_changes_);
}

void Run::compare_with_checkpoint(const std::string& checkpoint_settings) {
  if (!writer_) return;
  json saved = json::parse(saved_config_, nullptr, /*allow_exceptions=*/false);
  const json trained = json::parse(checkpoint_settings, nullptr, /*allow_exceptions=*/false);
  if (!trained.is_object()) return;  // not a Run's settings: config.json's comparison stands
  if (saved.is_object()) {
    saved.erase("changes_on_resume");
    saved.erase("program");
  }
  if (saved == trained) return;
  note("config.json records other settings than those the checkpoint was trained with (a resume with changes "
       "that ended before its first checkpoint): this run is compared with the checkpoint's");
  compare_with_resumed_run(checkpoint_settings, allow_changes_);
}

void Run::compare_with_resumed_run(const std::string& saved_config, bool allow_changes) {
  const json saved = json::parse(saved_config, nullptr, /*allow_exceptions=*/false);
  if (!saved.is_object()) {
    check(allow_changes, "--resume: {} is missing or not a JSON object, so this run's settings cannot be compared "
          "with the resumed run's; restore it, or add --resume-with-changes to resume without the comparison",
          path("config.json"));
    note(fmt::format("{} is missing or unreadable: the settings of the run being resumed are not compared "
                     "(--resume-with-changes)", path("config.json")));
    return;
  }
  // Another program's run is named as such, not by the settings it lacks.
  if (const auto maker = saved.find("program"); maker != saved.end() && !program_.empty())
    check(*maker == program_, "--resume: the run in '{}' was made by another program, {}, not {}; resume it with {}, "
          "or choose another --out", dir_.string(), display_setting(*maker), program_, display_setting(*maker));
  const json settings = json::parse(settings_json_);
  json changes = json::object();
  std::vector<std::string> refused, unknown;
  for (const auto& [name, value] : settings.items()) {
    if (name == "resume" || name == "resume-with-changes" || name == "resume_with_changes") continue;
    const bool free = std::find(may_change_.begin(), may_change_.end(), name) != may_change_.end();
    // A setting the resumed run does not record (its program was older) may
    // have been anything: unknown, and refused like a change.
    if (!saved.contains(name)) {
      changes[name] = json::array({nullptr, value});
      if (!free) unknown.push_back(fmt::format("{} {}", label(name), display_setting(value)));
      continue;
    }
    if (saved[name] == value) continue;
    changes[name] = json::array({saved[name], value});
    if (!free)
      refused.push_back(fmt::format("{} {}", label(name), display_change(saved[name], value)));
  }
  check(refused.empty() || allow_changes,
        "--resume would train something else than the run in '{}': {}; resume with the run's own settings, or add "
        "--resume-with-changes to continue with these", dir_.string(), fmt::join(refused, ", "));
  if (unknown.size() > 4) {  // the first few, and how many more
    const size_t more = unknown.size() - 3;
    unknown.resize(3);
    unknown.push_back(fmt::format("and {} more", more));
  }
  check(unknown.empty() || allow_changes,
        "--resume: the run in '{}' does not record {} (it was made by an older version of the program), so what it "
        "trained with is unknown; add --resume-with-changes to continue with {}", dir_.string(),
        unknown.size() == 1 ? "this setting" : "these settings", fmt::join(unknown, ", "));
  for (const auto& [name, pair] : changes.items())
    note(!saved.contains(name)
             ? fmt::format("{} on resume: {} (the resumed run does not record it)", label(name),
                           display_setting(pair[1]))
             : fmt::format("{} changed on resume: {}", label(name), display_change(pair[0], pair[1])));
  changes_json_ = changes.dump();
}

void Run::lock_directory() {
  const std::string file = path(".lock");
  lock_.fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  // O_NOFOLLOW fails with ELOOP ("too many levels of symbolic links") at a link.
  check(lock_.fd >= 0 || errno != ELOOP, "'{}' is a symbolic link; the run does not write through links: remove it "
        "(the run makes its own lock file)", file);
  check(lock_.fd >= 0, "cannot create the lock file '{}': {}", file, std::strerror(errno));
  struct stat st {};
  check(::fstat(lock_.fd, &st) == 0 && S_ISREG(st.st_mode), "'{}' is not a regular file; remove it (the run makes "
        "its own lock file)", file);
  if (::flock(lock_.fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(lock_.fd, pid, sizeof pid - 1, 0);
    ::close(lock_.fd);
    lock_.fd = -1;
    check(error == EWOULDBLOCK, "cannot lock '{}': {}", file, std::strerror(error));
    std::string holder(pid, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    throw Error(fmt::format("another run (pid {}) is using the run directory '{}'; wait for it to end or choose "
                            "another --out", holder.empty() ? "unknown" : holder, dir_.string()));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_.fd, 0) != 0 || ::pwrite(lock_.fd, pid.data(), pid.size(), 0) < 0)
    throw Error(fmt::format("cannot write '{}': {}", file, std::strerror(errno)));
}

void Run::move_earlier_run_aside() {
  const fs::path aside = move_run_aside(dir_, replaced_files_);
  note(fmt::format("--overwrite: moved the earlier run's {} into {}; the folder's other files stay",
                   fmt::join(replaced_files_, ", "), aside.string()));
}

Run::~Run() {
  if (!writer_) return;
  const bool by_error = std::uncaught_exceptions() > uncaught_at_creation_;
  try {
    if (!files_open_) {
      // Stopped before training began: by an error (a bad input, a bad
      // checkpoint), leave the directory as it was; otherwise save the logs.
      if (!by_error) open_files();
    } else if (by_error && log_.good()) {
      write_line("stopped by an error (the message follows on stderr)");
    }
  } catch (const std::exception& e) {
    // When an error stopped the run, that error is the message: this line
    // failing as well (a full disk) must not print it a second time.
    if (!by_error) print_error(error_message(e).c_str());
  }
}

Run::LockFile::~LockFile() {
  if (fd >= 0) ::close(fd);  // releases the lock
}

void Run::check_run_files() const {
  for (const char* name : kRunFiles) {
    std::error_code ec;
    const fs::file_type type = fs::symlink_status(dir_ / name, ec).type();
    check(type != fs::file_type::symlink, "'{}' is a symbolic link; the run writes only files of its own directory, "
          "never through a link", path(name));
    // Opening a FIFO waits for a reader for ever.
    check(type == fs::file_type::regular || type == fs::file_type::not_found, "'{}' is not a regular file (a FIFO, "
          "a device or a folder); move it away: the run reads and writes only regular files", path(name));
  }
}

void Run::open_files() {
  if (!replaced_files_.empty()) move_earlier_run_aside();
  check_run_files();
  json config = json::parse(settings_json_);
  if (!program_.empty()) config["program"] = program_;
  // Every resume that changed a setting, with the step it took effect at.
  const json saved = resuming_ ? json::parse(saved_config_, nullptr, false) : json();
  json history = saved.is_object() && saved.contains("changes_on_resume") && saved["changes_on_resume"].is_array()
                     ? saved["changes_on_resume"]
                     : json::array();
  // A change recorded at or after this resume's step was made by a resume
  // that ended before its first checkpoint: it never trained.
  json trained_history = json::array();
  for (const json& change : history)
    if (change.contains("step") && change["step"].is_number_integer() && change["step"].get<int64_t>() < begin_step_)
      trained_history.push_back(change);
  history = std::move(trained_history);
  if (!changes_json_.empty() && changes_json_ != "{}")
    history.push_back({{"step", begin_step_}, {"changed", json::parse(changes_json_)}});
  if (!history.empty()) config["changes_on_resume"] = history;
  write_file_atomically(path("config.json"), config.dump(2) + '\n');
  const std::string log_path = path("train.log");
  log_.open(log_path, resuming_ ? std::ios::app : std::ios::trunc);
  check(log_.is_open(), "cannot write '{}': {}", log_path, std::strerror(errno));
  files_open_ = true;
  for (const std::string& line : pending_lines_) log_ << line << '\n';
  pending_lines_.clear();
  log_.flush();
  check(log_.good(), "cannot write '{}': {}", log_path, std::strerror(errno));
  // A resumed run keeps the lines read_metrics_up_to chose; a fresh one starts it empty.
  const std::string metrics_path = path("metrics.jsonl");
  if (kept_metrics_) write_file_atomically(metrics_path, *kept_metrics_);
  if (!resuming_ || kept_metrics_) {
    metrics_.open(metrics_path, resuming_ ? std::ios::app : std::ios::trunc);
    check(metrics_.is_open(), "cannot write '{}': {}", metrics_path, std::strerror(errno));
  }
}

std::string Run::path(std::string_view file_name) const { return (dir_ / file_name).string(); }

void Run::begin_training(int64_t step, std::optional<int64_t> metrics_lines) {
  check(!training_begun_, "Run::begin_training: called twice");
  check(step >= 0, "Run::begin_training: step is {}", step);
  check(resuming_ || step == 0, "Run::begin_training: a fresh run starts at step 0, not {} (--resume continues a run)",
        step);
  begin_step_ = step;
  if (writer_) {
    // metrics.jsonl is read, and a damaged one refused, before any file is written.
    if (resuming_) {
      check_run_files();
      read_metrics_up_to(step, metrics_lines);
    }
    open_files();
    if (resuming_) note(metrics_note_);
  }
  training_begun_ = true;
  clock_start_ = Clock::now();
  paused_seconds_ = 0;
  if (pause_depth_ > 0) pause_start_ = clock_start_;
  last_train_step_ = step;
  last_train_seconds_ = carried_seconds_;
}

void Run::read_metrics_up_to(int64_t step, std::optional<int64_t> lines) {
  const std::string file = path("metrics.jsonl");
  std::vector<std::string> all;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) all.push_back(line);
  }
  size_t last = all.size();  // the last line that is not empty: the only one a crash can tear
  while (last > 0 && all[last - 1].empty()) --last;
  std::string kept;
  int64_t kept_count = 0, later = 0, torn = 0, index = 0;
  for (size_t n = 0; n < all.size(); ++n) {
    const std::string& line = all[n];
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
      check(n + 1 == last, "{} line {} is not a metrics line; the run's record is damaged — restore it or start "
            "afresh with --overwrite", file, n + 1);
      ++torn;
      continue;
    }
    // Lines past the checkpoint's step, and at its step those logged after
    // it was saved (the final test: the count the checkpoint records).
    const bool after = j["step"].get<int64_t>() > step || (lines && index >= *lines);
    ++index;
    if (after) {
      ++later;
      continue;
    }
    if (j.contains("time_sec") && j["time_sec"].is_number())
      carried_seconds_ = std::max(carried_seconds_, j["time_sec"].get<double>());
    kept += line + '\n';
    ++kept_count;
  }
  kept_metrics_ = std::move(kept);
  metrics_lines_ = kept_count;
  metrics_note_ = fmt::format("resumed at step {}: kept {} metrics lines, dropped {} after the checkpoint and {} torn",
                              step, kept_count, later, torn);
}

double Run::train_seconds() const {
  if (!training_begun_) return carried_seconds_;
  auto now = Clock::now();
  double paused = paused_seconds_;
  if (pause_depth_ > 0) paused += std::chrono::duration<double>(now - pause_start_).count();
  return carried_seconds_ + std::chrono::duration<double>(now - clock_start_).count() - paused;
}

Run::ClockPause::ClockPause(Run& run) : run_(run) {
  if (run_.pause_depth_++ == 0) run_.pause_start_ = Clock::now();
}

Run::ClockPause::~ClockPause() {
  if (--run_.pause_depth_ == 0)
    run_.paused_seconds_ += std::chrono::duration<double>(Clock::now() - run_.pause_start_).count();
}

// ---- data ----

namespace {

// FNV-1a over bytes.
uint64_t fnv1a(const void* data, size_t bytes, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

constexpr uint64_t kFnvOffset = 1469598103934665603ull;

}  // namespace

uint64_t content_hash(const Tensor& values) {
  if (!values.defined()) return kFnvOffset;
  const std::vector<int64_t>& dims = values.shape().dims();
  const uint64_t hash = fnv1a(dims.data(), dims.size() * sizeof(int64_t), kFnvOffset);
  return fnv1a(values.data(), static_cast<size_t>(values.numel()) * sizeof(float), hash);
}

uint64_t content_hash(const std::vector<std::vector<int32_t>>& sequences) {
  uint64_t hash = kFnvOffset;
  for (const std::vector<int32_t>& s : sequences) {
    const uint64_t length = s.size();
    hash = fnv1a(&length, sizeof length, hash);
    hash = fnv1a(s.data(), s.size() * sizeof(int32_t), hash);
  }
  return hash;
}

uint64_t content_hash(const std::vector<int32_t>& values) {
  return fnv1a(values.data(), values.size() * sizeof(int32_t), kFnvOffset);
}

void Run::check_same_data(const std::vector<DataFingerprint>& data) const {
  const dist::ProcessGroup& group = dist::ProcessGroup::world();
  if (!group.distributed()) return;
  json mine = json::array();
  for (const DataFingerprint& d : data) mine.push_back({d.name, d.count, fmt::format("{:016x}", d.hash)});
  const std::vector<std::string> all = group.all_gather(mine.dump());
  const json reference = json::parse(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    const json other = json::parse(all[r]);
    check(other.size() == reference.size(), "rank {} describes its data in other terms than rank 0", r);
    for (size_t i = 0; i < reference.size(); ++i)
      check(other[i] == reference[i],
            "rank {} read other data than rank 0: {} {} (hash {}) against {} (hash {}); every process of a job must "
            "read the same files", r, reference[i][0].get<std::string>(), other[i][1].dump(),
            other[i][2].get<std::string>(), reference[i][1].dump(), reference[i][2].get<std::string>());
  }
}

// ---- logging ----

namespace {

const char* const kStandardFields[] = {"step", "split", "loss", "time_sec", "sec_per_1k_steps"};

void add_fields(json& line, std::string& text, const Run::Fields& extra, const char* caller) {
  for (const auto& [name, value] : extra) {
    for (const char* standard : kStandardFields)
      check(name != standard, "{}: extra field '{}' has the name of a standard field", caller, name);
    line[name] = value;
    text += fmt::format("  {} {:.6g}", name, value);
  }
}

}  // namespace

void Run::require_training_begun(const char* what) const {
  check(training_begun_, "Run::{}: call begin_training(step) first", what);
}

void Run::log_train(int64_t step, double loss, const Fields& extra) {
  require_training_begun("log_train");
  double seconds = train_seconds();
  json line = {{"step", step}, {"split", "train"}, {"loss", loss}, {"time_sec", seconds}};
  std::string text = fmt::format("step {:>8}  train  loss {:>10.6f}", step, loss);
  if (step > last_train_step_) {
    double per_1k = (seconds - last_train_seconds_) / static_cast<double>(step - last_train_step_) * 1000.0;
    line["sec_per_1k_steps"] = per_1k;
    text += fmt::format("  {:>8.2f} s/1k steps", per_1k);
  } else {
    line["sec_per_1k_steps"] = nullptr;
    text += fmt::format("  {:>8} s/1k steps", "-");
  }
  add_fields(line, text, extra, "Run::log_train");
  last_train_step_ = step;
  last_train_seconds_ = seconds;
  write_metrics(line.dump());
  write_line(text);
}

void Run::log_eval(std::string_view split, int64_t step, double loss, const Fields& extra) {
  require_training_begun("log_eval");
  check(split == "valid" || split == "test", "Run::log_eval: split must be \"valid\" or \"test\", not \"{}\"", split);
  json line = {{"step", step}, {"split", split}, {"loss", loss}, {"time_sec", train_seconds()}};
  std::string text = fmt::format("step {:>8}  {:<5}  loss {:>10.6f}", step, split, loss);
  add_fields(line, text, extra, "Run::log_eval");
  write_metrics(line.dump());
  write_line(text);
}

void Run::note(std::string_view message) { write_line(std::string(message)); }

void Run::write_metrics(const std::string& json_line) {
  if (!writer_) return;
  metrics_ << json_line << '\n';
  ++metrics_lines_;
  metrics_.flush();
  check(metrics_.good(), "cannot write '{}': {}", path("metrics.jsonl"), std::strerror(errno));
}

void Run::write_line(const std::string& text, bool timestamp) {
  if (!writer_) return;
  // A path in a note may hold any bytes; the log is UTF-8 text (core/escape_bytes.h).
  std::string line = timestamp ? fmt::format("[{}] {}", format_duration(
                                     std::chrono::duration<double>(Clock::now() - created_).count()),
                                             escape_bytes(text))
                               : escape_bytes(text);
  clear_progress_line();
  std::cout << line << '\n' << std::flush;
  if (!files_open_) {
    pending_lines_.push_back(std::move(line));
    return;
  }
  log_ << line << '\n';
  log_.flush();
  check(log_.good(), "cannot write '{}': {}", path("train.log"), std::strerror(errno));
}

}  // namespace rg
