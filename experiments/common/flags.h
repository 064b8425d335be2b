#pragma once
// The flags every driver shares, and the strict parsing of every driver's
// flags: --seed, --threads, --out, --config, --resume, --overwrite,
// --log-every (add_run_options); validators with one message shape; and
// parse_flags, which refuses what CLI11 alone would let through. A run
// (train/run.h) keeps the parsed settings in its config.json (run_settings).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

namespace rg {

// Adds --seed, --threads, --out, --config (a TOML or INI file whose keys are
// flag names, e.g. `lr = 0.1`; unknown keys are errors), --resume,
// --resume-with-changes, --overwrite and --log-every, and makes every option
// show its default in --help and in the saved settings. Call it before adding
// the driver's own flags.
void add_run_options(CLI::App& app, RunOptions& options);

// The trainer's flags every driver has: --stop-after N (stop after step N as
// if interrupted, to test --resume), --train-minutes, --skip-nonfinite,
// --follow-free-cores, --bucket-mb, --collective-deadline and --precision.
void add_trainer_flags(CLI::App& app, TrainingOptions& options);

// Validators with one message shape, "--log-every must be above 0, got 0"
// (parse_flags puts the flag's name in front). NaN and ±Inf fail each.
extern const CLI::Validator positive;      // > 0
extern const CLI::Validator non_negative;  // ≥ 0
CLI::Validator in_range(double low, double high);  // low ≤ x ≤ high

// Settings a resumed run may change without --resume-with-changes: they
// change how the run is watched or how fast it goes, not what it trains.
// Every other setting that differs from the run's config.json is refused.
bool may_change_on_resume(const std::string& flag);

// Parses the command line. Returns nothing when the program should go on;
// otherwise the exit code, after printing the help (0) to `out` or one error
// line (2) to `err`: "error: <what is wrong>; see <program> --help".
// Stricter than CLI11 alone: a value given empty ("--translate ''", an unset
// shell variable) is an error for every flag; whole numbers are decimal
// ("010" and "0x14" are refused, not read as 8 and 20); every number must be
// finite; a --config file that starts with a UTF-8 byte-order mark is named.
std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv,
                               std::ostream& out, std::ostream& err);
std::optional<int> parse_flags(CLI::App& app, int argc, const char* const* argv);

// Every flag → its value as config.json keeps it: numbers and booleans
// typed, lists as arrays, an option without a value as null; in the order
// --help lists them.
nlohmann::ordered_json flag_settings(const CLI::App& app);
// The flags as a run's settings (train/run.h): flag_settings, the app's
// description as the title, may_change_on_resume marked.
//   rg::Run run(cfg.run, rg::run_settings(app));
RunSettings run_settings(const CLI::App& app);
// What a run reads, for RunOptions::inputs: every path given to `flags`
// and to --config, each by its flag (with --overwrite, none may lie inside --out).
//   cfg.run.inputs = rg::run_inputs(app, {"--data"});
std::vector<RunInput> run_inputs(const CLI::App& app, const std::vector<std::string>& flags);

}  // namespace rg
