#pragma once
// Shared helpers for the test suites: reading tensors from the PyTorch
// reference files and comparing with a reasoned tolerance; a scratch
// directory, an error's message, and running a driver and reading its metrics.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/tensor.h"
#include "rmsgrad/rmsgrad.h"

namespace rg::test {

// Loads tests/reference/<name>; a missing file fails the test loudly.
inline nlohmann::json load_reference(const std::string& name) {
  const std::string path = std::string(RG_TEST_REFERENCE_DIR) + "/" + name;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open reference file " << path);
  return nlohmann::json::parse(in);
}

// {"shape": [...], "data": [...]} → Tensor
inline Tensor tensor_from_json(const nlohmann::json& j) {
  std::vector<int64_t> shape = j.at("shape").get<std::vector<int64_t>>();
  std::vector<float> data = j.at("data").get<std::vector<float>>();
  return Tensor::from(Shape(shape), data);
}

// Every element within atol + rtol·|want|; reports the first offender.
inline bool all_close(const Tensor& got, const Tensor& want, float atol, float rtol, const std::string& what) {
  if (got.shape() != want.shape()) {
    FAIL_CHECK(what << ": shape " << got.shape().str() << ", expected " << want.shape().str());
    return false;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float a = got.data()[i], b = want.data()[i];
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      FAIL_CHECK(what << ": element " << i << " is " << a << ", expected " << b);
      return false;
    }
  }
  return true;
}

// A fresh directory under the system's temp folder, removed with its
// contents when the test ends; named by tag and process id.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("rg_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Writes `text` to a file of this directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return file(name);
  }
};

// The message of the rg::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The rg::Error that f throws names `where` (e.g. "path:line:") and says `what`.
inline void check_error(const std::function<void()>& f, const std::string& where, const std::string& what) {
  const std::string message = error_of(f);
  CAPTURE(message);
  CHECK(message.find(where) != std::string::npos);
  CHECK(message.find(what) != std::string::npos);
}

// Runs `program args` through the shell with stdout and stderr captured in
// dir/driver_output.txt; returns the exit code and leaves the text in `output`.
inline int run_program(const std::string& program, const std::string& args, const std::filesystem::path& dir,
                       std::string& output) {
  const std::filesystem::path log = dir / "driver_output.txt";
  const int status = std::system((program + " " + args + " > " + log.string() + " 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  output = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A whole file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The lines of a run's metrics.jsonl whose split is `split`, in order.
inline std::vector<nlohmann::json> metric_lines(const std::filesystem::path& run, const std::string& split) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string text; std::getline(in, text);) {
    nlohmann::json j = nlohmann::json::parse(text);
    if (j["split"] == split) lines.push_back(j);
  }
  return lines;
}

// Fresh leaves that need gradients, copies of inputs.
inline std::vector<Var> fresh_leaves(const std::vector<Tensor>& inputs) {
  std::vector<Var> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.clone(), true);
  return vars;
}

// A function's output and its inputs' gradients: f on fresh leaves of
// inputs, one backward from a fixed random projection of the output, so that
// two implementations of one function can be compared output and gradients.
struct Evaluated {
  Tensor y;
  std::vector<Tensor> grads;
};
inline Evaluated evaluate(const std::function<Var(const std::vector<Var>&)>& f, const std::vector<Tensor>& inputs) {
  std::vector<Var> vars = fresh_leaves(inputs);
  Var y = f(vars);
  Generator gen(99);
  tape().backward(y, normal(y.shape(), 0.0f, 1.0f, gen));
  tape().clear();
  Evaluated out{y.value(), {}};
  for (Var& v : vars) out.grads.push_back(v.has_grad() ? v.grad() : Tensor::zeros(v.shape()));
  return out;
}

}  // namespace rg::test
