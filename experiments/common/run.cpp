// The run: flags, the run directory, config.json, metrics.jsonl and train.log
// (see run.h for the files and the resume policy).
#include "rmsgrad/experiments/common/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <ctime>
#include <iterator>
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

// "" when `text` is a finite number for which ok(value) holds; otherwise
// what the flag must be, in the one message shape parse_flags completes.
// What is wrong with `text` as a number ("" when nothing): not a number, not
// finite, or too small for a float to hold (1e-400 would be read as 0).
std::string number_problem(const std::string& text) {
  if (text.empty()) return "must be a number, got nothing";
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return fmt::format("must be a number, got '{}'", text);
  if (!std::isfinite(value)) return fmt::format("must be a finite number, got {}", text);
  if ((errno == ERANGE && value == 0) || (value != 0 && std::fabs(value) < FLT_MIN))
    return fmt::format("is too small to hold (below {:g}), got {}", FLT_MIN, text);
  return {};
}

template <class Ok>
std::string number_check(const std::string& text, Ok ok, const std::string& must_be) {
  if (std::string problem = number_problem(text); !problem.empty()) return problem;
  return ok(std::strtod(text.c_str(), nullptr)) ? std::string() : fmt::format("must be {}, got {}", must_be, text);
}

}  // namespace

const CLI::Validator positive(
    [](std::string& text) { return number_check(text, [](double v) { return v > 0; }, "above 0"); }, "> 0");
const CLI::Validator non_negative(
    [](std::string& text) { return number_check(text, [](double v) { return v >= 0; }, "0 or more"); }, ">= 0");

CLI::Validator in_range(double low, double high) {
  return CLI::Validator(
      [=](std::string& text) {
        return number_check(text, [=](double v) { return v >= low && v <= high; },
                            fmt::format("between {} and {}", low, high));
      },
      fmt::format("in [{}, {}]", low, high));
}

bool may_change_on_resume(const std::string& flag) {
  static const char* const kFree[] = {
      "resume", "resume-with-changes", "overwrite", "out", "config", "threads", "keep-threads", "bucket-mb",
      "steps", "epochs", "stop-after", "train-minutes", "skip-nonfinite", "log-every", "eval-every",
      // evaluation only: how the validation and test sets are scored
      "beam", "valid-beam", "length-norm", "valid-limit", "decode-batch", "eval-batch", "fold-images",
      "test-src", "test-tgt", "test-data", "translate", "output"};
  for (const char* name : kFree)
    if (flag == name) return true;
  return false;
}

namespace {

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
      ->check(in_range(0, 4096));
  app.add_option("--out", options.out, "run directory: config.json, metrics.jsonl, train.log, checkpoints");
  app.add_flag("--resume", options.resume, "continue the run in --out from its last checkpoint");
  app.add_flag("--resume-with-changes", options.resume_with_changes,
               "with --resume: allow settings that change what is trained to differ from the run's");
  app.add_flag("--overwrite", options.overwrite,
               "when --out holds a run, move its files into <out>/replaced-<time>/ and start afresh");
  app.add_option("--log-every", options.log_every, "steps between training log lines")->check(positive);
}

namespace {

// The --config file named on the command line, if any.
std::string config_file(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) return argv[i + 1];
    if (arg.rfind("--config=", 0) == 0) return std::string(arg.substr(9));
  }
  return {};
}

bool is_boolean(const std::string& value) {
  for (const char* word : {"true", "false", "1", "0", "on", "off", "yes", "no"})
    if (value == word) return true;
  return false;
}

// What CLI11 lets through: an empty value, a whole number that is not plain
// decimal, a number that is not finite. "" when every value is sound.
std::string unsound_value(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0) continue;  // not given
    std::string type = opt->get_type_name();
    type = type.substr(0, type.find(':'));
    const std::string name = "--" + opt->get_single_name();
    if (opt->get_expected_min() == 0) {  // a flag: on, or an explicit true/false (--resume=false)
      for (const std::string& value : opt->results())
        if (!value.empty() && !is_boolean(value)) return fmt::format("{} takes true or false, got {}", name, value);
      continue;
    }
    for (const std::string& value : opt->results()) {
      if (value.empty()) return fmt::format("{} was given an empty value (an unset shell variable?)", name);
      if (type == "INT" || type == "UINT") {
        const bool negative = value[0] == '-';
        const std::string_view digits = std::string_view(value).substr(negative ? 1 : 0);
        const bool decimal = !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos &&
                             (digits.size() == 1 || digits[0] != '0');
        if (!decimal) return fmt::format("{} takes a decimal whole number, got {}", name, value);
        if (negative && type == "UINT") return fmt::format("{} must be 0 or more, got {}", name, value);
        int64_t as_signed = 0;
        uint64_t as_unsigned = 0;
        const bool fits = type == "UINT" ? parse_whole(value, as_unsigned) : parse_whole(value, as_signed);
        if (!fits) return fmt::format("{} is too large, got {}", name, value);
      } else if (type == "FLOAT") {
        if (const std::string problem = number_problem(value); !problem.empty()) return name + " " + problem;
        if (value.find_first_of("xX") != std::string::npos)  // strtod reads hexadecimal too
          return fmt::format("{} takes a decimal number, got {}", name, value);
      } else if (type == "BOOLEAN") {
        if (!is_boolean(value)) return fmt::format("{} takes true or false, got {}", name, value);
      }
    }
  }
  return {};
}

}  // namespace

std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                               std::ostream& err) {
  std::string program = argc > 0 ? fs::path(argv[0]).filename().string() : app.get_name();
  auto fail = [&](const std::string& what) {
    err << "error: " << what << "; see " << program << " --help\n";
    return 2;
  };
  if (const std::string config = config_file(argc, argv); !config.empty()) {
    std::ifstream in(config, std::ios::binary);
    char head[3] = {};
    if (in.read(head, 3) && head[0] == '\xEF' && head[1] == '\xBB' && head[2] == '\xBF')
      return fail(fmt::format("--config {} starts with a UTF-8 byte-order mark; save it without one", config));
  }
  try {
    app.parse(argc, argv);
    if (const std::string problem = unsound_value(app); !problem.empty()) return fail(problem);
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
    // CLI11's "Could not convert: --steps = 1e3" in the one message shape.
    const std::string convert = "Could not convert: ";
    if (const size_t equals = what.find(" = "); what.rfind(convert, 0) == 0 && equals != std::string::npos) {
      const std::string flag = what.substr(convert.size(), equals - convert.size()), value = what.substr(equals + 3);
      const CLI::Option* option = app.get_option_no_throw(flag);
      const std::string type = option ? option->get_type_name() : "";
      what = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0
                 ? fmt::format("{} takes a decimal whole number, got {}", flag, value)
                 : fmt::format("{} cannot take {}", flag, value);
    }
    // CLI11's "--steps: At Most 1 required but received 2": a flag given twice.
    if (const size_t at = what.find(": At Most 1 required but received "); at != std::string::npos)
      what = fmt::format("{} was given {} times; give it once", what.substr(0, at),
                         what.substr(at + std::string_view(": At Most 1 required but received ").size()));
    // "--batch: must be above 0, got 0" (our validators) reads "--batch must be above 0, got 0".
    if (const size_t colon = what.find(": "); what.rfind("--", 0) == 0 && colon != std::string::npos &&
                                              what.find(' ') > colon &&
                                              (what.compare(colon + 2, 5, "must ") == 0 ||
                                               what.compare(colon + 2, 3, "is ") == 0))
      what.erase(colon, 1);
    return fail(what);
  }
}

std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv) {
  return parse_flags(app, argc, argv, std::cout, std::cerr);
}

int print_error(const char* message) {
  std::cout.flush();
  clear_progress_line();
  // One write: the processes of an MPI job share the terminal, and two
  // messages written in pieces would interleave.
  std::cerr << ("error: " + std::string(message) + "\n") << std::flush;
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
    const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    print_error(fmt::format("rank {} of {}: {}", group.rank(), group.size(), memory ? kOutOfMemory : e.what()).c_str());
    group.abort(1);
  }
}

// ---- the run directory ----

namespace {

// The files that make a run directory hold a run.
const char* const kRunFiles[] = {"config.json", "metrics.jsonl", "train.log", "checkpoint.safetensors",
                                 "best.safetensors"};

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
  std::error_code ignored_error;
  fs::remove(temporary, ignored_error);  // a link left there is removed, not written through
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
  check(!(options.resume && options.overwrite), "--resume continues the run in --out and --overwrite moves it aside; "
        "give one of them");
  check(!options.resume_with_changes || options.resume, "--resume-with-changes goes with --resume");
  // A run directory of its own: never the root or a folder of the system's.
  {
    std::error_code ignored;
    const fs::path where = fs::weakly_canonical(fs::absolute(options.out), ignored);
    check(where != where.root_path(), "--out '{}' is the filesystem's root; name a run directory", options.out);
    for (const char* system : {"/dev", "/proc", "/sys", "/boot", "/etc"})
      check(where != system && where.string().rfind(std::string(system) + "/", 0) != 0,
            "--out '{}' is in {}, a folder of the system's; name a run directory of your own", options.out, system);
  }
  check(!options.resume || fs::is_directory(options.out),
        "--resume: there is no run in '{}' (no such directory) to continue", options.out);
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
  lock_directory();

  // A fresh run never mixes its files with an earlier run's: refused, or
  // (--overwrite) the earlier run is moved aside when training begins.
  std::vector<std::string> earlier;
  for (const char* name : kRunFiles)
    if (fs::exists(fs::symlink_status(dir_ / name))) earlier.push_back(name);
  if (!resuming_ && !earlier.empty()) {
    check(options.overwrite, "--out '{}' holds a run ({}): --resume continues it, --overwrite moves its files "
          "into {}/replaced-<time>/ and starts afresh, or choose another --out", dir_.string(),
          fmt::join(earlier, ", "), dir_.string());
    replacing_ = true;
  }
  if (resuming_ && fs::is_regular_file(path("config.json"))) {
    std::ifstream in(path("config.json"));
    saved_config_ = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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
  if (resuming_) compare_with_resumed_run(saved_config_, options.resume_with_changes);
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
  const json settings = json::parse(settings_json_);
  json changes = json::object();
  std::vector<std::string> refused;
  for (const auto& [name, value] : settings.items()) {
    if (name == "resume" || name == "resume-with-changes" || !saved.contains(name) || saved[name] == value) continue;
    changes[name] = json::array({saved[name], value});
    if (!may_change_on_resume(name))
      refused.push_back(fmt::format("--{} {} -> {}", name, display(saved[name]), display(value)));
  }
  check(refused.empty() || allow_changes,
        "--resume would train something else than the run in '{}': {}; resume with the run's own settings, or add "
        "--resume-with-changes to continue with these", dir_.string(), fmt::join(refused, ", "));
  for (const auto& [name, pair] : changes.items())
    note(fmt::format("--{} changed on resume: {} -> {}", name, display(pair[0]), display(pair[1])));
  changes_json_ = changes.dump();
}

void Run::lock_directory() {
  const std::string file = path(".lock");
  lock_.fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  check(lock_.fd >= 0, "cannot create the lock file '{}': {}", file, std::strerror(errno));
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
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  fs::path aside = dir_ / fmt::format("replaced-{}", stamp);
  for (int n = 2; fs::exists(fs::symlink_status(aside)); ++n) aside = dir_ / fmt::format("replaced-{}-{}", stamp, n);
  std::error_code ec;
  fs::create_directory(aside, ec);
  check(!ec, "--overwrite: cannot create '{}': {}", aside.string(), ec.message());
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name == ".lock" || name.rfind("replaced-", 0) == 0) continue;
    fs::rename(entry.path(), aside / name, ec);
    check(!ec, "--overwrite: cannot move '{}' into '{}': {}", entry.path().string(), aside.string(), ec.message());
  }
  note(fmt::format("--overwrite: the earlier run's files are in {}", aside.string()));
}

Run::~Run() {
  if (!writer_) return;
  const bool by_error = std::uncaught_exceptions() > uncaught_at_creation_;
  try {
    if (!files_open_) {
      // Stopped before training began: by an error (a bad input, a bad
      // checkpoint), leave the directory as it was; otherwise save the logs.
      if (!by_error) open_files();
    } else if (by_error) {
      write_line("stopped by an error (the message follows on stderr)");
    }
  } catch (const std::exception& e) {
    print_error(e.what());
  }
}

Run::LockFile::~LockFile() {
  if (fd >= 0) ::close(fd);  // releases the lock
}

void Run::open_files() {
  if (replacing_) move_earlier_run_aside();
  for (const char* name : kRunFiles)
    check(!fs::is_symlink(dir_ / name), "'{}' is a symbolic link; the run writes only files of its own directory, "
          "never through a link", path(name));
  json config = json::parse(settings_json_);
  // Every resume that changed a setting, with the step it took effect at.
  const json saved = resuming_ ? json::parse(saved_config_, nullptr, false) : json();
  json history = saved.is_object() && saved.contains("changes_on_resume") && saved["changes_on_resume"].is_array()
                     ? saved["changes_on_resume"]
                     : json::array();
  if (!changes_json_.empty() && changes_json_ != "{}")
    history.push_back({{"step", begin_step_}, {"changed", json::parse(changes_json_)}});
  if (!history.empty()) config["changes_on_resume"] = history;
  write_replacing(path("config.json"), config.dump(2) + '\n');
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
  begin_step_ = step;
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
