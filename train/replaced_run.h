#pragma once
// An earlier run in a run directory, and --overwrite: which files are a
// run's, and moving them (only them) aside, all or nothing. Run (run.h)
// calls these; a program never needs to.
//
// A run's files are the names this program writes into its directory:
//   config.json, metrics.jsonl, train.log        Run's
//   checkpoint.safetensors, best.safetensors     the Trainer's
//   RunOptions::files                            the program's own (lm's sample.txt, the
//                                                translators' subword.model and hypotheses/)
// and the temporary ".<name>.tmp" of each, which an atomic write
// (core/atomic_file.h) leaves when it is killed. Nothing else in the folder
// is a run's: notes, sources, .git, data, other runs below it all stay.
//
// A folder holds a run when it holds a file that only a run writes
// (metrics.jsonl, train.log, a checkpoint), or a config.json that a run
// wrote: a JSON object naming its program or at least half of this run's
// settings (beside a run's other files, one setting is enough: an older
// version's run may record few). A config.json that is neither is someone
// else's: no run writes over it or moves it (--overwrite refuses it, alone
// or beside a run's files, as a fresh start does).
//
// Moving a run aside (--overwrite), into <folder>/replaced-<UTC time>/:
//   1. refuse when another process holds the lock of a run anywhere below
//      the folder (a <sub>/.lock);
//   2. create replaced-<time>/ and write in it the journal ".moving": the
//      names about to move, one a line, written whole;
//   3. rename each name into it; when a rename fails, rename back the names
//      already moved and raise the error;
//   4. remove the journal.
// A process killed between 2 and 4 leaves the journal behind. The next Run
// in the folder, whatever its flags, undoes that move before anything else:
// the folder is as it was before the interrupted --overwrite, and the new
// start does what it asks of it (--overwrite moves the run aside afresh,
// --resume continues it, a plain fresh run is refused).
#include <filesystem>
#include <string>
#include <vector>

#include "rmsgrad/train/run.h"

namespace rg {

// The files Run and the Trainer write; all but config.json are written by a run only.
inline constexpr const char* kRunFiles[] = {"config.json", "metrics.jsonl", "train.log", "checkpoint.safetensors",
                                            "best.safetensors"};

// Every name of a run's files, in the order above; `program_files` are RunOptions::files.
std::vector<std::string> run_file_names(const std::vector<std::string>& program_files);

// Whether `file` is a config.json a run wrote (above); `settings` names this run's settings.
bool is_run_config(const std::filesystem::path& file, const std::vector<std::string>& settings,
                   bool beside_run_files);

// The run files in `folder` when it holds a run, in run_file_names' order;
// empty when it holds none. `settings` names this run's settings (to know
// its config.json). Throws rg::Error when the folder holds a config.json
// that is not a run's.
std::vector<std::string> earlier_run_files(const std::filesystem::path& folder,
                                           const std::vector<std::string>& program_files,
                                           const std::vector<std::string>& settings);

// Throws rg::Error, naming the folder and the pid written in its lock, when
// another process holds a <sub>/.lock anywhere below `folder` (walked
// without following links, skipping replaced-* folders; the folder's own
// .lock is the caller's). A folder too large to walk is refused as well.
void refuse_live_runs_below(const std::filesystem::path& folder);

// Throws rg::Error, naming the flag, for an input that a run in `folder`
// could move or write over: one of the run's files or inside one (always),
// or anything inside the folder (with `overwrite`).
void refuse_inputs_inside(const std::filesystem::path& folder, const std::vector<RunInput>& inputs,
                          const std::vector<std::string>& program_files, bool overwrite);

// Moves `names` of `folder` into a new <folder>/replaced-<UTC time>/, all
// or nothing, as above (steps 1 to 4); returns that folder.
std::filesystem::path move_run_aside(const std::filesystem::path& folder, const std::vector<std::string>& names);

// Undoes a move that a killed process left half done (a replaced-*/.moving):
// puts its names back and removes its folder. Returns the names put back.
std::vector<std::string> undo_interrupted_move(const std::filesystem::path& folder);

}  // namespace rg
