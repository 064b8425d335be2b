#pragma once
// The layers' PyTorch reference cases (tests/reference/lstm_attention.json,
// written by tests/reference/make_lstm_attention_refs.py): each case's inputs,
// parameters, outputs and gradients, loaded into a layer and compared.
//
// Tolerance, 1e-5 + 1e-4·|b|: both sides run float32 through at most four
// steps of small GEMMs (K ≤ 28), norms over ≤ 68 units, sigmoid, tanh and
// softmax, with values and gradients of order 1. Each step adds a few ulps
// (~1e-7 relative) and a recurrence carries them forward with gains below ~2
// per step, so differences stay near 1e-6; the bound leaves 10×.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

namespace rg::test {

inline constexpr float kAtol = 1e-5f, kRtol = 1e-4f;

inline NormOptions norm_of(const nlohmann::json& ref, const nlohmann::json& c) {
  NormOptions norm;
  norm.kind = parse_norm_kind(c["norm"].get<std::string>());
  norm.eps = ref["eps"];
  return norm;
}

// Copies the reference parameters into the module by dotted name (after
// dropping `prefix`), zeroing their gradients.
inline void load_params(Module& m, const nlohmann::json& c, const std::string& prefix = "") {
  auto params = m.named_parameters();
  REQUIRE(params.size() == c["params"].size());
  for (auto& [name, p] : params) {
    const std::string key = name.substr(prefix.size());
    REQUIRE_MESSAGE(c["params"].contains(key), "no reference for parameter " << name);
    p.value().copy_from(tensor_from_json(c["params"][key]));
    p.zero_grad();
  }
}

// Input Vars (requiring gradients) by name from the case.
inline Var input(const nlohmann::json& c, const std::string& name) {
  return Var(tensor_from_json(c["inputs"][name]), true);
}

// Backward of Σ_k sum(output_k · projection_k) over the named outputs.
inline void backward_projected(const nlohmann::json& c, const std::vector<std::pair<std::string, Var>>& outputs) {
  Var loss;
  for (const auto& [name, out] : outputs) {
    Var term = sum(out * constant(tensor_from_json(c["projections"][name])));
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
  tape().clear();
}

inline void compare_outputs(const nlohmann::json& c, const std::vector<std::pair<std::string, Var>>& outputs) {
  for (const auto& [name, out] : outputs)
    all_close(out.value(), tensor_from_json(c["outputs"][name]), kAtol, kRtol, "output " + name);
}

inline void compare_grads(const nlohmann::json& c, const std::vector<std::pair<std::string, Var>>& inputs, Module& m,
                   const std::string& prefix = "") {
  for (auto [name, v] : inputs)
    all_close(v.grad(), tensor_from_json(c["grad_inputs"][name]), kAtol, kRtol, "grad " + name);
  for (auto& [name, p] : m.named_parameters()) {
    const std::string key = name.substr(prefix.size());
    REQUIRE_MESSAGE(c["grad_params"].contains(key), "no reference gradient for " << name);
    all_close(p.grad(), tensor_from_json(c["grad_params"][key]), kAtol, kRtol, "grad " + name);
  }
}

inline bool has_name(const Module& m, const std::string& name) {
  for (const auto& [n, _] : m.named_parameters())
    if (n == name) return true;
  return false;
}

}  // namespace rg::test
