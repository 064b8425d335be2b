#pragma once
// The bad-input catalog's machinery (tests/test_bad_inputs.cpp holds the
// table): each entry runs one driver on malformed input or mistaken flags,
// in a fresh directory whose run folder already holds an earlier run's files,
// and checks what a user must see:
//   - a non-zero exit;
//   - exactly one "error: " line on stderr, saying what the entry expects
//     (and no sanitizer report or uncaught-exception text);
//   - every file that was in the run folder before is still there, byte for
//     byte (a failed start must not eat the previous run's logs or checkpoint).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rg::test {

struct BadInput {
  std::string name;                                         // what is wrong, for the report
  std::string driver;                                       // the binary, perhaps with common flags
  std::string args;                                         // {in}: the input folder, {out}: the run folder (in both)
  std::vector<std::pair<std::string, std::string>> files;   // written first; "out/…" goes into the run folder
  std::string message;                                      // the error line must contain this
  // The run folder holds an earlier run: with --overwrite (the default, unless
  // the entry resumes) the failed start must still leave it alone; without,
  // the start is refused.
  bool overwrite = true;
  // Run after the files are written, for what bytes cannot say: a symbolic
  // link, a FIFO. Given the input folder and the run folder.
  std::function<void(const std::filesystem::path& in, const std::filesystem::path& out)> prepare = {};
};

inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every regular file under `dir`, by relative path, with its bytes.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) files[std::filesystem::relative(entry.path(), dir).string()] = slurp(entry.path());
  return files;
}

inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

inline void check_bad_input(const BadInput& entry, const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  CAPTURE(entry.name);
  const fs::path dir = root / entry.name, in = dir / "in", out = dir / "out";
  fs::remove_all(dir);
  fs::create_directories(in);
  fs::create_directories(out);
  // An earlier run's files, which a failed start must leave alone.
  std::ofstream(out / "config.json") << "{\"seed\": 0}\n";
  std::ofstream(out / "train.log") << "[0:00] an earlier run's log\n";
  std::ofstream(out / "metrics.jsonl") << "{\"step\":0,\"split\":\"valid\",\"loss\":2.5,\"time_sec\":0.1}\n";
  std::ofstream(out / "notes.txt") << "my notes\n";
  for (const auto& [name, bytes] : entry.files) {
    const fs::path file = name.rfind("out/", 0) == 0 ? out / name.substr(4) : in / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
  }
  if (entry.prepare) entry.prepare(in, out);
  const auto before = snapshot(out);

  const bool resuming = (entry.driver + " " + entry.args).find("--resume") != std::string::npos;
  const std::string args = replace_all(replace_all(entry.driver + " " + entry.args +
                                                       (entry.overwrite && !resuming ? " --overwrite" : ""),
                                                  "{in}", in.string()),
                                      "{out}", out.string());
  // Under a time limit, so that a driver that hangs (a FIFO read for ever) fails the entry, not the suite.
  const std::string command =
      "cd " + dir.string() + " && timeout -k 10 300 env OMP_NUM_THREADS=1 " + args + " > stdout.txt 2> stderr.txt";
  const int status = std::system(command.c_str());
  const std::string err = slurp(dir / "stderr.txt");
  CAPTURE(args);
  CAPTURE(err);
  REQUIRE(WIFEXITED(status));  // not killed by a signal
  CHECK(WEXITSTATUS(status) != 0);
  std::vector<std::string> error_lines;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("error: ", 0) == 0) error_lines.push_back(line);
  REQUIRE(error_lines.size() == 1);
  CHECK(error_lines[0].find(entry.message) != std::string::npos);
  CHECK(err.find("Sanitizer") == std::string::npos);
  CHECK(err.find("runtime error") == std::string::npos);
  CHECK(err.find("terminate called") == std::string::npos);
  CHECK(err.find("error: [json.exception") == std::string::npos);  // a JSON library's words alone
  const auto after = snapshot(out);
  for (const auto& [name, bytes] : before) {
    CAPTURE(name);
    REQUIRE(after.count(name) == 1);
    CHECK(after.at(name) == bytes);
  }
}

}  // namespace rg::test
