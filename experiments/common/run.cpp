// The run: flags, the run directory, config.json, metrics.jsonl and train.log
// (see run.h for the files and the resume policy).
#include "rmsgrad/experiments/common/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/experiments/common/progress.h"

namespace rg {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // keeps the flags in the order --help lists them

// ---- flags ----

namespace {

// A validator for counts that must be at least 1, with a short message.
const CLI::Validator kPositiveCount(
    [](std::string& text) -> std::string {
      int64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      bool ok = ec == std::errc() && end == text.data() + text.size() && value >= 1;
      return ok ? std::string() : "must be a whole number >= 1, not " + text;
    },
    "POSITIVE");

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

template <class T>
bool parse_whole(const std::string& text, T& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// One flag value as JSON, typed by CLI11's type name ("INT", "FLOAT", ...).
json typed_value(const std::string& text, const std::string& type, bool is_flag) {
  if (is_flag || type == "BOOLEAN") {
    if (text == "true" || text == "on" || text == "yes") return true;
    if (text == "false" || text == "off" || text == "no") return false;
  }
  if (int64_t i = 0; (is_flag || type == "INT") && parse_whole(text, i)) return i;
  if (uint64_t u = 0; type == "UINT" && parse_whole(text, u)) return u;
  if (type == "FLOAT" && !text.empty()) {
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && std::isfinite(d)) return d;
  }
  return text;
}

// A list default is captured as "[1,2,3]".
std::vector<std::string> split_list(std::string text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  std::vector<std::string> items;
  for (size_t start = 0; !text.empty();) {
    size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

json option_value(const CLI::Option& opt) {
  std::string type = opt.get_type_name();
  type = type.substr(0, type.find(':'));  // drop validator descriptions
  bool is_flag = opt.get_expected_min() == 0 && type.empty();
  bool is_list = opt.get_expected_max() > 1 || opt.get_type_size_max() > 1;
  std::vector<std::string> values = opt.results();
  if (values.empty()) {
    std::string fallback = opt.get_default_str();
    if (fallback.empty()) return is_flag ? json(false) : json(nullptr);
    values = is_list ? split_list(fallback) : std::vector<std::string>{fallback};
  }
  if (!is_list) return typed_value(values.back(), type, is_flag);
  json list = json::array();
  for (const std::string& v : values) list.push_back(typed_value(v, type, is_flag));
  return list;
}

json flag_settings(const CLI::App& app) {
  json settings = json::object();
  for (const CLI::Option* opt : app.get_options())
    if (opt != app.get_help_ptr() && opt != app.get_help_all_ptr())
      settings[opt->get_single_name()] = option_value(*opt);
  return settings;
}

std::string display(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.is_null() ? "-" : value.dump();
}

}  // namespace

void add_run_options(CLI::App& app, RunOptions& options) {
  for (CLI::Option* opt : app.get_options())  // flags the driver added before this call
    if (opt != app.get_help_ptr()) opt->capture_default_str();
  app.option_defaults()->always_capture_default();
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.set_config("--config", "", "read flags from a TOML or INI file; keys are flag names (lr = 0.1)");
  app.add_option("--seed", options.seed, "random seed: one seed, one run, on every machine");
  app.add_option("--threads", options.threads, "threads for OpenMP and OpenBLAS (0: OMP_NUM_THREADS or all cores)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--out", options.out, "run directory: config.json, metrics.jsonl, train.log, checkpoints");
  app.add_flag("--resume", options.resume, "continue the run in --out from its last checkpoint");
  app.add_option("--log-every", options.log_every, "steps between training log lines")->check(kPositiveCount);
}

std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                               std::ostream& err) {
  std::string program = argc > 0 ? fs::path(argv[0]).filename().string() : app.get_name();
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = one_line(e.what());
    const std::string unknown_key = "INI was not able to parse ";
    const CLI::Option* config = app.get_config_ptr();
    if (what.rfind(unknown_key, 0) == 0 && config && !config->results().empty())
      what = fmt::format("--config {}: unknown setting '{}'", config->results().back(), what.substr(unknown_key.size()));
    err << "error: " << what << "; see " << program << " --help\n";
    return 2;
  }
}

std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv) {
  return parse_flags(app, argc, argv, std::cout, std::cerr);
}

int print_error(const char* message) {
  std::cout.flush();
  clear_progress_line();
  std::cerr << "error: " << message << std::endl;
  return 1;
}

int run_main(int argc, char** argv, int (*train)(int argc, char** argv)) {
  restart_with_polite_threads(argv);  // first, before MPI starts: see core/polite_threads.h
  dist::ProcessGroup& group = dist::ProcessGroup::world();  // joins the job first, when started by mpirun
  if (!group.distributed()) return report_errors([&] { return train(argc, argv); });
  // One process's error must end the whole job at once: the others would
  // wait for it in their next collective forever.
  try {
    return train(argc, argv);
  } catch (const std::exception& e) {
    print_error(fmt::format("rank {} of {}: {}", group.rank(), group.size(), e.what()).c_str());
    group.abort(1);
  }
}

// ---- the run directory ----

namespace {

// Every process of a job must train the same thing: the first setting in
// which a rank differs from rank 0 is an error on every rank.
void check_same_settings(const dist::ProcessGroup& group, const json& settings) {
  const std::vector<std::string> all = group.all_gather(settings.dump());
  const json reference = json::parse(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    const json other = json::parse(all[r]);
    for (const auto& [name, value] : reference.items())
      check(other.contains(name) && other[name] == value,
            "rank {} runs with --{} {}, rank 0 with {}; every process of a job needs the same settings", r, name,
            other.contains(name) ? display(other[name]) : "(none)", display(value));
    for (const auto& [name, value] : other.items())
      check(reference.contains(name), "rank {} has a setting --{} that rank 0 has not", r, name);
  }
}

// Writes a whole file through a temporary one renamed over it, so that a full
// disk or a crash leaves the old file or the new one, never half of either.
void write_replacing(const std::string& file, const std::string& text) {
  const std::string temporary = file + ".tmp";
  std::ofstream out(temporary, std::ios::trunc);
  out << text;
  out.close();  // flushes: a full disk shows up here, not after the rename
  if (out.fail()) {
    const std::string reason = std::strerror(errno);
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw Error(fmt::format("cannot write '{}': {}", file, reason));
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  check(!ec, "cannot replace '{}': {}", file, ec.message());
}

}  // namespace

namespace {

// The flags of a program that has only the run's own, set to `options`.
struct RunFlags {
  RunOptions values;
  CLI::App app;
};

std::unique_ptr<RunFlags> run_flags(const RunOptions& options) {
  auto flags = std::make_unique<RunFlags>();
  flags->values = options;
  add_run_options(flags->app, flags->values);
  return flags;
}

}  // namespace

// (The flags live until the end of the delegation: they are a temporary of its full expression.)
Run::Run(const RunOptions& options) : Run(run_flags(options)->app, options) {}

Run::Run(const CLI::App& app, const RunOptions& options)
    : dir_(options.out), resuming_(options.resume), log_every_(options.log_every), created_(Clock::now()),
      uncaught_at_creation_(std::uncaught_exceptions()) {
  check(!options.out.empty(), "--out is empty; name a run directory");
  const dist::ProcessGroup& group = dist::ProcessGroup::world();
  writer_ = group.writer();
  if (options.threads > 0)
    set_num_threads(options.threads);
  else if (dist::local_processes() > 1)  // the cores are shared by the job's processes on this machine
    set_num_threads(std::max(1, num_threads() / dist::local_processes()));
  json settings = flag_settings(app);
  settings_json_ = settings.dump(2);
  if (group.distributed()) check_same_settings(group, settings);
  if (!writer_) return;  // only rank 0 touches the run directory and prints

  std::error_code ec;
  fs::create_directories(dir_, ec);
  check(!ec, "cannot create the run directory '{}': {}", dir_.string(), ec.message());
  check(fs::is_directory(dir_), "cannot use '{}' as the run directory: it exists and is not a directory", dir_.string());

  // Nothing in the directory is changed yet (see run.h): only check that
  // files can be created in it.
  const fs::path probe = dir_ / fmt::format(".write-test-{}", ::getpid());
  {
    std::ofstream test(probe);
    check(test.is_open(), "cannot write in the run directory '{}': {}", dir_.string(), std::strerror(errno));
  }
  fs::remove(probe, ec);
  replacing_ = !resuming_ && fs::exists(path("metrics.jsonl")) && fs::file_size(path("metrics.jsonl"), ec) > 0;

  json saved;
  if (resuming_) {
    std::ifstream in(path("config.json"));
    if (in) saved = json::parse(in, nullptr, /*allow_exceptions=*/false);
  }

  // The header: every setting, fixed-width, written as one block (one write
  // to the terminal and the log, not one per line).
  size_t width = 0;
  for (const auto& [name, value] : settings.items()) width = std::max(width, name.size() + 2);
  std::string header;
  if (!app.get_description().empty()) header += app.get_description() + '\n';
  header += fmt::format("{:<{}}  {} ({})\n", "run", width, dir_.string(), resuming_ ? "resuming" : "fresh");
  header += fmt::format("{:<{}}  {}", "threads", width, num_threads());
  if (group.distributed())
    header += fmt::format("\n{:<{}}  {} (data-parallel over MPI; --batch is the global batch)", "processes", width,
                          group.size());
  for (const auto& [name, value] : settings.items())
    header += fmt::format("\n{:<{}}  {}", "--" + name, width, display(value));
  write_line(header, false);
  if (replacing_) note("replacing the logs of the run already in " + dir_.string() + " (--resume continues it)");
  if (saved.is_object())
    for (const auto& [name, value] : settings.items())
      if (name != "resume" && saved.contains(name) && saved[name] != value)
        note(fmt::format("--{} changed on resume: {} -> {}", name, display(saved[name]), display(value)));
}

Run::~Run() {
  if (!writer_) return;
  const bool by_error = std::uncaught_exceptions() > uncaught_at_creation_;
  try {
    if (!files_open_) {
      // Stopped before training began: by an error (a bad input, a bad
      // checkpoint), leave the directory as it was; otherwise save the logs.
      if (!by_error) open_files();
      return;
    }
    if (by_error) write_line("stopped by an error (the message follows on stderr)");
  } catch (const std::exception& e) {
    print_error(e.what());
  }
}

void Run::open_files() {
  write_replacing(path("config.json"), settings_json_ + '\n');
  const std::string log_path = path("train.log");
  log_.open(log_path, resuming_ ? std::ios::app : std::ios::trunc);
  check(log_.is_open(), "cannot write '{}': {}", log_path, std::strerror(errno));
  files_open_ = true;
  for (const std::string& line : pending_lines_) log_ << line << '\n';
  pending_lines_.clear();
  log_.flush();
  check(log_.good(), "cannot write '{}': {}", log_path, std::strerror(errno));
  // A resumed run rewrites metrics.jsonl in keep_metrics_up_to; a fresh one starts it empty.
  if (!resuming_) {
    metrics_.open(path("metrics.jsonl"), std::ios::trunc);
    check(metrics_.is_open(), "cannot write '{}': {}", path("metrics.jsonl"), std::strerror(errno));
  }
}

std::string Run::path(std::string_view file_name) const { return (dir_ / file_name).string(); }

void Run::begin_training(int64_t step) {
  check(!training_begun_, "Run::begin_training: called twice");
  check(step >= 0, "Run::begin_training: step is {}", step);
  check(resuming_ || step == 0, "Run::begin_training: a fresh run starts at step 0, not {} (--resume continues a run)",
        step);
  if (writer_) {
    open_files();
    if (resuming_) keep_metrics_up_to(step);
  }
  training_begun_ = true;
  clock_start_ = Clock::now();
  paused_seconds_ = 0;
  if (pause_depth_ > 0) pause_start_ = clock_start_;
  last_train_step_ = step;
  last_train_seconds_ = carried_seconds_;
}

void Run::keep_metrics_up_to(int64_t step) {
  const std::string file = path("metrics.jsonl");
  std::vector<std::string> kept;
  int64_t later = 0, torn = 0;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
        ++torn;
        continue;
      }
      if (j["step"].get<int64_t>() > step) {
        ++later;
        continue;
      }
      if (j.contains("time_sec") && j["time_sec"].is_number())
        carried_seconds_ = std::max(carried_seconds_, j["time_sec"].get<double>());
      kept.push_back(line);
    }
  }
  std::string text;
  for (const std::string& line : kept) text += line + '\n';
  write_replacing(file, text);
  metrics_.open(file, std::ios::app);
  check(metrics_.is_open(), "cannot write '{}': {}", file, std::strerror(errno));
  note(fmt::format("resumed at step {}: kept {} metrics lines, dropped {} after the checkpoint and {} torn", step,
                   kept.size(), later, torn));
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
  metrics_.flush();
  check(metrics_.good(), "cannot write '{}': {}", path("metrics.jsonl"), std::strerror(errno));
}

void Run::write_line(const std::string& text, bool timestamp) {
  if (!writer_) return;
  std::string line = timestamp ? fmt::format("[{}] {}", format_duration(
                                     std::chrono::duration<double>(Clock::now() - created_).count()), text)
                               : text;
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
