// The flags every driver shares and the strict parsing of flags (flags.h).
#include "rmsgrad/experiments/common/flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // keeps the flags in the order --help lists them


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
      "resume", "resume-with-changes", "overwrite", "out", "config", "threads", "follow-free-cores", "bucket-mb",
      "collective-deadline",
      // --steps and --epochs are not free: the learning-rate schedules span them.
      "stop-after", "train-minutes", "skip-nonfinite", "log-every", "eval-every",
      // evaluation only: how the validation and test sets are scored
      "beam", "valid-beam", "length-norm", "valid-limit", "decode-batch", "eval-batch", "fold-images",
      "test-src", "test-tgt", "test-data", "translate", "output",
      // sampling after training (lm): what is drawn from the trained model, not what is trained
      "sample-chars", "prompt", "temperature", "top-k"};
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
  return escape_bytes(text);  // a path is bytes; JSON holds UTF-8 (core/escape_bytes.h)
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

}  // namespace

json flag_settings(const CLI::App& app) {
  json settings = json::object();
  for (const CLI::Option* opt : app.get_options())
    if (opt != app.get_help_ptr() && opt != app.get_help_all_ptr())
      settings[opt->get_single_name()] = option_value(*opt);
  return settings;
}

std::vector<RunInput> run_inputs(const CLI::App& app, const std::vector<std::string>& flags) {
  std::vector<RunInput> inputs;
  std::vector<std::string> names = flags;
  names.push_back("--config");
  for (const std::string& flag : names) {
    const json value = option_value(*app.get_option(flag));  // throws for a flag the app lacks: a driver's bug
    for (const json& path : value.is_array() ? value : json::array({value}))
      if (path.is_string() && !path.get<std::string>().empty()) inputs.push_back({flag, path.get<std::string>()});
  }
  return inputs;
}

void add_trainer_flags(CLI::App& app, TrainingOptions& options) {
  app.add_option("--stop-after", options.stop_after, "stop after this step as if interrupted (for testing --resume)")
      ->check(non_negative);
  app.add_option("--train-minutes", options.train_minutes,
                 "a budget of training time: stop after the step that ends this many minutes of training "
                 "(evaluation excluded) or at --steps, whichever comes first, then validate and test as at "
                 "the last step (0: no budget)")
      ->check(non_negative);
  app.add_flag("--skip-nonfinite", options.skip_nonfinite,
               "skip a step whose loss or gradient is NaN or infinite instead of stopping");
  app.add_flag("--follow-free-cores", options.follow_free_cores,
               "between steps, use only the cores other processes leave free (by default a run keeps --threads "
               "threads throughout and repeats bit for bit however busy the machine is)");
  app.add_option("--bucket-mb", options.bucket_mb,
                 "under mpirun: MiB of gradients summed over the processes at a time, while backward runs")
      ->check(in_range(0.001, 4096.0));
  // Parsed from its name, so that config.json records "bf16", not the enum's number.
  app.add_option_function<std::string>(
         "--precision", [&options](const std::string& name) { options.precision = parse_precision(name); },
         "the matrix products' and convolutions' inputs: f32, or bf16 with f32 sums (needs oneDNN); "
         "weights, optimizer state, norms and losses stay f32")
      ->check(CLI::IsMember({"f32", "bf16"}))
      // Refused here, before a run folder exists, where this build or CPU cannot.
      ->check(CLI::Validator(
          [](std::string& name) { return product_precision_problem(parse_precision(name)); }, ""))
      ->default_str(std::string(precision_name(options.precision.value_or(Precision::F32))));
}

RunSettings run_settings(const CLI::App& app) {
  // After parsing, the app's name is argv[0]: the program is its file name.
  RunSettings run{.title = app.get_description(), .name_prefix = "--",
                  .program = fs::path(app.get_name()).filename().string()};
  const json settings = flag_settings(app);
  for (const auto& [name, value] : settings.items())
    run.settings.push_back({.name = name, .json = value.dump(), .may_change_on_resume = may_change_on_resume(name)});
  return run;
}

void add_run_options(CLI::App& app, RunOptions& options) {
  for (CLI::Option* opt : app.get_options())  // flags the driver added before this call
    if (opt != app.get_help_ptr()) opt->capture_default_str();
  app.option_defaults()->always_capture_default();
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.set_config("--config", "", "read flags from a TOML or INI file; keys are flag names (lr = 0.1)");
  app.add_option("--seed", options.seed, "random seed: one seed, one run, on every machine");
  app.add_option("--threads", options.threads, "threads for OpenMP and OpenBLAS (0: OMP_NUM_THREADS or all cores)")
      ->check(in_range(0, kMaxThreads));
  app.add_option("--out", options.out, "run directory: config.json, metrics.jsonl, train.log, checkpoints");
  app.add_flag("--resume", options.resume, "continue the run in --out from its last checkpoint");
  app.add_flag("--resume-with-changes", options.resume_with_changes,
               "with --resume: allow settings that change what is trained to differ from the run's");
  app.add_flag("--overwrite", options.overwrite,
               "when --out holds a run, move its files into <out>/replaced-<time>/ and start afresh");
  app.add_option("--log-every", options.log_every, "steps between training log lines")->check(positive);
  app.add_option_function<double>(
         "--collective-deadline", [&options](double minutes) { options.collective_deadline_minutes = minutes; },
         "under mpirun: minutes a process waits for the others in a sum or broadcast before it ends the "
                 "job, naming the ranks that had not arrived (0: for ever); rank 0's validations must fit in it")
      ->check(CLI::Validator(
          [](std::string& text) {
            double minutes = -1.0;
            return CLI::detail::lexical_cast(text, minutes) && (minutes == 0.0 || (minutes >= 0.01 && minutes <= 1e6))
                       ? std::string()
                       : std::string("give 0 (no deadline) or 0.01 to 1000000 minutes");
          },
          "0 or in [0.01, 1e6]"))
      ->default_str(fmt::format("{}", options.collective_deadline_minutes.value_or(
                                          dist::ProcessGroup::kDefaultDeadlineSeconds / 60.0)));
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

// What is wrong with the --config file, "" when nothing: CLI11 would read a
// FIFO for ever, /dev/zero without end, and a NUL byte as "INI was not able
// to parse" naming no file. Opened without blocking and looked at through
// the open file, so that what is checked is what is read.
std::string config_problem(const std::string& path) {
  constexpr off_t kMaxBytes = 1 << 20;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fmt::format("--config {} cannot be read: {}", path, std::strerror(errno));
  struct stat st {};
  std::string problem;
  std::string text;
  if (::fstat(fd, &st) != 0) {
    problem = fmt::format("--config {} cannot be read: {}", path, std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    problem = fmt::format("--config {} is not a regular file (a FIFO, a device or a folder); give a TOML or INI file",
                          path);
  } else if (st.st_size > kMaxBytes) {
    problem = fmt::format("--config {} is a file of {} bytes; flags files are small (at most {} bytes)", path,
                          static_cast<long long>(st.st_size), static_cast<long long>(kMaxBytes));
  } else {
    char buffer[65536];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) != 0 && text.size() <= kMaxBytes;) {
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        problem = fmt::format("--config {} cannot be read: {}", path, std::strerror(errno));
        break;
      }
      text.append(buffer, static_cast<size_t>(got));
    }
  }
  ::close(fd);
  if (!problem.empty()) return problem;
  if (text.size() > static_cast<size_t>(kMaxBytes))
    return fmt::format("--config {} grew past {} bytes while read; flags files are small", path,
                       static_cast<long long>(kMaxBytes));
  if (text.rfind("\xEF\xBB\xBF", 0) == 0)
    return fmt::format("--config {} starts with a UTF-8 byte-order mark; save it without one", path);
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + nul, '\n'));
    return fmt::format("--config {} holds a NUL byte (line {}, byte {}); a flags file is text", path, line, nul);
  }
  return {};
}

// How often `flag` ("--seed") appears on the command line, as --seed or --seed=….
int times_given(const std::string& flag, int argc, const char* const* argv) {
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == flag || (arg.size() > flag.size() && arg.rfind(flag + "=", 0) == 0)) ++count;
  }
  return count;
}

// The words CLI11 did not expect, which it lists last first ("... not
// expected: 3 --bogus"): named in the order given, the flags among them first.
std::string unexpected_words(const std::vector<std::string>& words) {
  std::vector<std::string> flags;
  for (const std::string& word : words)
    if (word.size() > 1 && word[0] == '-') flags.push_back(word.substr(0, word.find('=')));
  if (flags.size() == 1) return fmt::format("unknown flag {}", flags[0]);
  if (!flags.empty()) return fmt::format("unknown flags {}", fmt::join(flags, ", "));
  return fmt::format("unexpected {} {} (every value follows its flag)", words.size() == 1 ? "word" : "words",
                     fmt::join(words, " "));
}

// --help's exit: 0 when the text reached standard output, else an error.
int help_written(std::ostream& out, std::ostream& err, const std::string& program) {
  if (out) return 0;
  const int cause = errno;
  err << one_line_escaped(fmt::format("error: {} --help: the help text could not be written to standard output{}",
                                      program, cause != 0 ? fmt::format(" ({})", std::strerror(cause)) : ""))
      << '\n';
  return 1;
}

}  // namespace

std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                               std::ostream& err) {
  std::string program = argc > 0 ? fs::path(argv[0]).filename().string() : app.get_name();
  auto fail = [&](const std::string& what) {
    err << one_line_escaped("error: " + what + "; see " + program + " --help") + '\n' << std::flush;  // one write
    return 2;
  };
  const std::string config_path = config_file(argc, argv);
  if (!config_path.empty())
    if (const std::string problem = config_problem(config_path); !problem.empty()) return fail(problem);
  try {
    app.parse(argc, argv);
    if (const std::string problem = unsound_value(app); !problem.empty()) return fail(problem);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    out << app.help() << std::flush;
    return help_written(out, err, program);
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All) << std::flush;
    return help_written(out, err, program);
  } catch (const CLI::ExtrasError&) {
    return fail(unexpected_words(app.remaining()));
  } catch (const CLI::ParseError& e) {
    std::string what = one_line(e.what());
    // A required flag or argument missing is reported before unknown ones:
    // an unknown flag (a typo) comes first, it is the likelier cause.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !app.remaining().empty())
      return fail(unexpected_words(app.remaining()));
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
    // The same from a --config list (seed = [1,2]) when the command line gave it at most once.
    if (const size_t at = what.find(": At Most 1 required but received ");
        at != std::string::npos && !config_path.empty() && times_given(what.substr(0, at), argc, argv) <= 1)
      what = fmt::format("{} takes one value, --config {} gives a list", what.substr(0, at), config_path);
    else if (at != std::string::npos)
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

}  // namespace rg
