// An earlier run in a run directory: finding its files, refusing a folder
// with a live run below it or the run's inputs inside it, and moving the
// files aside all or nothing (replaced_run.h has the rules).
#include "rmsgrad/train/replaced_run.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/core/error.h"

namespace rg {

namespace fs = std::filesystem;

namespace {

const char* const kJournal = ".moving";       // in replaced-<time>/ while a move is under way
constexpr int64_t kMostEntriesWalked = 100000;  // refuse_live_runs_below gives up on a larger tree
constexpr uintmax_t kMostJsonBytes = 1 << 20;   // a run's config.json or a journal is far smaller

bool exists_here(const fs::path& path) {  // the name itself: a link counts, dangling or not
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// A name of a file in one folder: no path, nothing the run directory keeps for itself.
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\n') == std::string::npos && name != ".lock" && name.rfind("replaced-", 0) != 0;
}

// The text of a regular file (not a link, not a FIFO) of at most kMostJsonBytes; nothing otherwise.
std::optional<std::string> small_file_text(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec))) return std::nullopt;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec || size > kMostJsonBytes) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The pid written in a lock file that another process holds; nothing when it
// is free, or is no lock (not a regular file, unreadable). A shared lock
// taken for the test conflicts only with a run's exclusive one, and closing
// the file releases it.
std::optional<std::string> lock_holder(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> holder;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    std::string text(pid, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    holder = text.empty() ? "unknown" : text;
  }
  ::close(fd);
  return holder;
}

// fsync on a folder makes the renames and creations in it survive a crash.
void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// A new <folder>/replaced-<UTC time>[-n]/.
fs::path create_aside_folder(const fs::path& folder) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  fs::path aside = folder / fmt::format("replaced-{}", stamp);
  for (int n = 2; exists_here(aside); ++n) aside = folder / fmt::format("replaced-{}-{}", stamp, n);
  std::error_code ec;
  fs::create_directory(aside, ec);
  check(!ec, "--overwrite: cannot create '{}': {}", aside.string(), ec.message());
  return aside;
}

// Step 3 reversed: renames back into `folder` those of `names` that are in
// `aside`, then removes the journal and `aside` (when nothing else is in it).
// Returns the names put back.
std::vector<std::string> put_back(const fs::path& folder, const fs::path& aside, const std::vector<std::string>& names) {
  std::vector<std::string> back;
  std::error_code ec;
  for (const std::string& name : names) {
    if (!exists_here(aside / name)) continue;  // it had not moved
    check(!exists_here(folder / name), "cannot put '{}' back into '{}': '{}' exists there too; move one of them "
          "away, then remove '{}'", (aside / name).string(), folder.string(), name, (aside / kJournal).string());
    fs::rename(aside / name, folder / name, ec);
    check(!ec, "cannot put '{}' back into '{}': {}", (aside / name).string(), folder.string(), ec.message());
    back.push_back(name);
  }
  sync_folder(folder);
  fs::remove(aside / kJournal, ec);
  check(!ec, "cannot remove '{}': {}", (aside / kJournal).string(), ec.message());
  fs::remove(aside, ec);  // fails, and leaves it, when anything else is in it
  return back;
}

}  // namespace

std::vector<std::string> run_file_names(const std::vector<std::string>& program_files) {
  std::vector<std::string> names(std::begin(kRunFiles), std::end(kRunFiles));
  for (const std::string& name : program_files) {
    check(plain_name(name), "RunOptions::files: '{}' is not the name of a file in the run directory", name);
    names.push_back(name);
  }
  const size_t files = names.size();
  for (size_t i = 0; i < files; ++i) names.push_back("." + names[i] + ".tmp");  // core/atomic_file.h's temporaries
  return names;
}

bool is_run_config(const fs::path& file, const std::vector<std::string>& settings, bool beside_run_files) {
  const std::optional<std::string> text = small_file_text(file);
  if (!text) return false;
  const nlohmann::json config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return false;
  if (const auto program = config.find("program"); program != config.end() && program->is_string()) return true;
  const auto named = std::count_if(settings.begin(), settings.end(),
                                   [&](const std::string& name) { return config.contains(name); });
  return named > 0 && (beside_run_files || 2 * static_cast<size_t>(named) >= settings.size());
}

std::vector<std::string> earlier_run_files(const fs::path& folder, const std::vector<std::string>& program_files,
                                           const std::vector<std::string>& settings) {
  bool holds_run = std::any_of(std::begin(kRunFiles) + 1, std::end(kRunFiles),
                               [&](const char* name) { return exists_here(folder / name); });
  // A config.json that is not a run's is never moved nor written over, with
  // or without a run's other files beside it.
  if (exists_here(folder / "config.json")) {
    check(is_run_config(folder / "config.json", settings, holds_run),
          "--out '{}' holds a config.json that is not a run's (not a JSON object with this run's settings); a run "
          "would write over it: move it away, or choose another --out", folder.string());
    holds_run = true;
  }
  std::vector<std::string> files;
  if (!holds_run) return files;
  for (const std::string& name : run_file_names(program_files))
    if (exists_here(folder / name)) files.push_back(name);
  return files;
}

void refuse_live_runs_below(const fs::path& folder) {
  std::error_code ec;
  fs::recursive_directory_iterator entry(folder, fs::directory_options::skip_permission_denied, ec);
  int64_t walked = 0;
  for (; !ec && entry != fs::recursive_directory_iterator(); entry.increment(ec)) {
    check(++walked <= kMostEntriesWalked, "--overwrite: '{}' holds more than {} files and folders, too many to "
          "look through for a run in progress; move the earlier run's files away yourself, or choose another --out",
          folder.string(), kMostEntriesWalked);
    const std::string name = entry->path().filename().string();
    if (name.rfind("replaced-", 0) == 0) entry.disable_recursion_pending();  // runs moved aside earlier
    if (name != ".lock" || entry.depth() == 0) continue;                    // the folder's own lock is ours
    if (const std::optional<std::string> pid = lock_holder(entry->path()))
      throw Error(fmt::format("--overwrite: a run (pid {}) is training in '{}', inside --out '{}'; wait for it to "
                              "end, or choose another --out", *pid, entry->path().parent_path().string(),
                              folder.string()));
  }
  check(!ec, "--overwrite: cannot look through '{}' for a run in progress: {}", folder.string(), ec.message());
}

void refuse_inputs_inside(const fs::path& folder, const std::vector<RunInput>& inputs,
                          const std::vector<std::string>& program_files, bool overwrite) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(folder), ec);
  const std::vector<std::string> names = run_file_names(program_files);
  for (const RunInput& input : inputs) {
    if (input.path.empty()) continue;
    // Links resolved, so that an input reached through one is caught too.
    const fs::path relative = fs::weakly_canonical(fs::absolute(input.path), ec).lexically_relative(root);
    if (relative.empty() || *relative.begin() == "..") continue;  // outside the folder
    const std::string first = relative.begin()->string();
    check(std::find(names.begin(), names.end(), first) == names.end(),
          "{} '{}' is the run file '{}' of --out '{}' (or inside it), which a run writes over or moves; keep the "
          "run's inputs outside its directory", input.flag, input.path, first, folder.string());
    check(!overwrite, "{} '{}' is inside --out '{}'; with --overwrite the run directory may hold none of the run's "
          "inputs: keep them outside it", input.flag, input.path, folder.string());
  }
}

fs::path move_run_aside(const fs::path& folder, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    check(plain_name(name), "--overwrite: '{}' is not the name of a file in the run directory", name);
  refuse_live_runs_below(folder);  // 1. (again: one may have started since the run's constructor looked)
  // 2. The folder and the journal, durable before anything moves.
  const fs::path aside = create_aside_folder(folder);
  sync_folder(folder);
  std::string journal;
  for (const std::string& name : names) journal += name + '\n';
  write_file_atomically((aside / kJournal).string(), journal);
  // 3. Every name, or none.
  for (size_t i = 0; i < names.size(); ++i) {
    std::error_code ec;
    fs::rename(folder / names[i], aside / names[i], ec);
    if (!ec) continue;
    const std::string failure = fmt::format("--overwrite: cannot move '{}' into '{}': {}",
                                            (folder / names[i]).string(), aside.string(), ec.message());
    try {
      put_back(folder, aside, names);
    } catch (const Error& e) {
      throw Error(fmt::format("{}; putting back the files already moved failed too ({}); the next run started in "
                              "'{}' puts them back", failure, e.what(), folder.string()));
    }
    throw Error(failure + "; nothing was moved");
  }
  // 4. Done: the journal goes once the renames are durable.
  sync_folder(folder);
  sync_folder(aside);
  std::error_code ec;
  fs::remove(aside / kJournal, ec);
  check(!ec, "--overwrite: cannot remove '{}': {}", (aside / kJournal).string(), ec.message());
  return aside;
}

std::vector<std::string> undo_interrupted_move(const fs::path& folder) {
  std::vector<fs::path> journals;
  std::error_code ec;
  for (fs::directory_iterator entry(folder, ec); !ec && entry != fs::directory_iterator(); entry.increment(ec))
    if (entry->path().filename().string().rfind("replaced-", 0) == 0 &&
        fs::is_directory(fs::symlink_status(entry->path(), ec)) && exists_here(entry->path() / kJournal))
      journals.push_back(entry->path() / kJournal);
  check(!ec, "cannot read the run directory '{}': {}", folder.string(), ec.message());
  std::vector<std::string> back;
  for (const fs::path& journal : journals) {
    const std::optional<std::string> text = small_file_text(journal);
    check(text.has_value(), "'{}' is not a journal of an --overwrite (a small regular file); remove it", journal.string());
    std::vector<std::string> names;
    for (size_t start = 0; start < text->size();) {
      const size_t end = std::min(text->find('\n', start), text->size());
      names.push_back(text->substr(start, end - start));
      check(plain_name(names.back()), "'{}' names '{}', which is not a file of the run directory; remove it",
            journal.string(), names.back());
      start = end + 1;
    }
    const std::vector<std::string> put = put_back(folder, journal.parent_path(), names);
    back.insert(back.end(), put.begin(), put.end());
  }
  return back;
}

}  // namespace rg
