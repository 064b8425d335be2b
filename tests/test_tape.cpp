// The tape: recording order, accumulation, skipping, no-grad, release, printing.
#include <doctest/doctest.h>

#include <memory>

#include "rmsgrad.h"

using namespace rg;

TEST_CASE("a value used twice receives both gradients") {
  Var x = parameter(Tensor::from(Shape{2}, {3, -2}));
  Var y = sum(x * x + x);  // dy/dx = 2x + 1
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{7, -3});
  tape().clear();
}

TEST_CASE("parameter gradients accumulate across backward passes until zeroed") {
  Var w = parameter(Tensor::from(Shape{1}, {2}));
  for (int step = 0; step < 3; ++step) {
    sum(w * 5.0f).backward();
    tape().clear();
  }
  CHECK(w.grad().item() == 15.0f);
  w.zero_grad();
  CHECK(w.grad().item() == 0.0f);
}

TEST_CASE("constants are not recorded and get no gradient") {
  tape().clear();
  Var c = constant(Tensor::ones(Shape{3}));
  Var d = exp(c) * 2.0f;  // no input needs a gradient: nothing recorded
  CHECK(tape().size() == 0);
  CHECK_FALSE(d.requires_grad());
  Var w = parameter(Tensor::ones(Shape{3}));
  Var loss = sum(w * d);
  CHECK(tape().size() == 2);
  loss.backward();
  CHECK_FALSE(c.has_grad());
  CHECK(w.grad().at({0}) == doctest::Approx(2.0f * std::exp(1.0f)));
  tape().clear();
}

TEST_CASE("nodes that no gradient reaches are skipped") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{2}));
  Var used = sum(w * 3.0f);
  Var unused = sum(exp(w));  // recorded after, never part of the loss
  used.backward();
  CHECK(w.grad().to_vector() == std::vector<float>{3, 3});
  CHECK_FALSE(unused.has_grad());
  tape().clear();
}

TEST_CASE("no-grad scope records nothing") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{2}));
  {
    NoGradGuard guard;
    Var y = sum(w * w);
    CHECK_FALSE(y.requires_grad());
    CHECK(tape().size() == 0);
    CHECK_FALSE(tape().recording());
  }
  CHECK(tape().recording());
  CHECK(sum(w).requires_grad());
  tape().clear();
}

TEST_CASE("clearing the tape releases intermediate nodes") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{100}));
  std::weak_ptr<Node> intermediate;
  {
    Var h = tanh(w * 2.0f);
    intermediate = h.node_ptr();
    sum(h).backward();
  }
  CHECK_FALSE(intermediate.expired());  // the tape still holds it
  tape().clear();
  CHECK(intermediate.expired());
  CHECK(w.has_grad());  // parameters live outside the tape
}

TEST_CASE("the tape prints id, op, shape and inputs") {
  tape().clear();
  Var a = parameter(Tensor::ones(Shape{2, 3}));
  Var b = parameter(Tensor::ones(Shape{3, 4}));
  Var c = matmul(a, b);
  Var d = relu(c);
  std::string s = tape().str();
  CHECK(s.find(fmt::format("#{} matmul [2, 4] <- #{}(leaf) #{}(leaf)", c.node()->id, a.node()->id, b.node()->id)) !=
        std::string::npos);
  CHECK(s.find(fmt::format("#{} relu [2, 4] <- #{}\n", d.node()->id, c.node()->id)) != std::string::npos);
  tape().clear();
}

TEST_CASE("backward checks its input") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{2}));
  Var y = w * 2.0f;
  CHECK_THROWS_WITH_AS(y.backward(), "backward: the loss must have one element, its shape is [2]", Error);
  Var c = constant(Tensor::ones(Shape{1}));
  CHECK_THROWS_AS(sum(c).backward(), Error);
  CHECK_THROWS_AS(tape().backward(y, Tensor::ones(Shape{3})), Error);
  tape().clear();
}

TEST_CASE("backward from a non-scalar output with a seed gradient") {
  tape().clear();
  Var x = parameter(Tensor::from(Shape{3}, {1, 2, 3}));
  Var y = x * x;
  tape().backward(y, Tensor::from(Shape{3}, {1, 0, -1}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 0, -6});
  tape().clear();
}

TEST_CASE("a seed gradient is adopted without a copy but never modified") {
  tape().clear();
  Var x = parameter(Tensor::from(Shape{2}, {1, 2}));
  Var y = x * 3.0f;
  Tensor seed = Tensor::from(Shape{2}, {1, 1});
  tape().backward(y, seed);
  CHECK_FALSE(y.has_grad());  // intermediate gradients are released after backward
  tape().backward(y, seed);   // a second pass propagates only its own seed
  CHECK(seed.to_vector() == std::vector<float>{1, 1});
  CHECK(x.grad().to_vector() == std::vector<float>{6, 6});
  // A leaf seeded directly: its buffer is the caller's until something adds.
  Var leaf = parameter(Tensor::from(Shape{2}, {0, 0}));
  Tensor s2 = Tensor::from(Shape{2}, {5, 5});
  tape().backward(leaf, s2);
  CHECK(leaf.grad().to_vector() == std::vector<float>{5, 5});
  leaf.zero_grad();
  CHECK(s2.to_vector() == std::vector<float>{5, 5});
  tape().backward(leaf, s2);
  tape().backward(leaf, s2);  // adds into the leaf's gradient: copies first
  CHECK(leaf.grad().to_vector() == std::vector<float>{10, 10});
  CHECK(s2.to_vector() == std::vector<float>{5, 5});
  tape().clear();
}

TEST_CASE("wrong inputs to ops throw, naming op and shapes") {
  Var a = constant(Tensor::zeros(Shape{2, 3}));
  Var b = constant(Tensor::zeros(Shape{4, 5}));
  CHECK_THROWS_WITH_AS(matmul(a, b), "matmul: inner dimensions differ: a is [2, 3], b is [4, 5]", Error);
  CHECK_THROWS_WITH_AS(add(a, b), "add: shapes [2, 3] and [4, 5] cannot be broadcast", Error);
  CHECK_THROWS_AS(sum(a, 2), Error);
  CHECK_THROWS_AS(reshape(a, {4, -1}), Error);
  CHECK_THROWS_AS(slice(a, 1, 2, 5), Error);
  CHECK_THROWS_AS(concat({a, b}, 0), Error);
  CHECK_THROWS_AS(index_select(a, 0, {0, 2}), Error);
  CHECK_THROWS_AS(embedding(a, Indices({0, 1, 2})), Error);
  CHECK_THROWS_AS(cross_entropy(a, Indices({0, 3})), Error);
  CHECK_THROWS_AS(cross_entropy(a, Indices({0})), Error);
  CHECK_THROWS_AS(permute(a, {0, 0}), Error);
  CHECK_THROWS_AS(split(a, {1, 1}, 1), Error);
  CHECK_THROWS_AS(masked_fill(a, Tensor::zeros(Shape{3, 3}), 0.0f), Error);
  CHECK_THROWS_AS(clamp(a, 1.0f, 0.0f), Error);
  CHECK_THROWS_AS(Var{Tensor{}}, Error);
}
