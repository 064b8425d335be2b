#pragma once
// Shared helpers for the test suites: reading tensors from the PyTorch
// reference files and comparing with a reasoned tolerance.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"

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

}  // namespace rg::test
