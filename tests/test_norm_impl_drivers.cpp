// --norm-impl composed in every driver: each driver trains a few steps on its
// synthetic default with LayerNorm fused and then composed from ops, from the
// same seed, and logs the same losses up to float32 rounding; a bad value of
// the flag is a clear error.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "test_util.h"

namespace fs = std::filesystem;
using rg::test::TempDir;

namespace {

struct Driver {
  const char* name;
  const char* binary;
  std::string flags;  // a small synthetic run logging every step
};

const Driver kDrivers[] = {
    {"cifar10", RG_CIFAR10_BIN, "--width 0.125 --train-size 200 --valid-size 100 --batch 50 --zca off --steps 6"},
    {"order_embedding", RG_ORDER_EMBEDDING_BIN,
     "--embed-dim 32 --word-dim 16 --synthetic-images 300 --synthetic-dim 32 --batch 32 --eval-every 6 --steps 6"},
    {"attentive_reader", RG_ATTENTIVE_READER_BIN,
     "--embed 16 --hidden 16 --batch 8 --synthetic-questions 200 --eval-every 6 --steps 6"},
    {"rnnsearch", RG_RNNSEARCH_BIN,
     "--embed 24 --hidden 24 --batch 16 --synthetic-max-words 6 --synthetic-pairs 300 --valid-limit 20 "
     "--valid-beam 1 --beam 1 --eval-every 6 --steps 6"},
};

}  // namespace

TEST_CASE("every driver: --norm-impl composed logs the fused run's losses") {
  for (const Driver& d : kDrivers) {
    INFO(std::string(d.name));
    TempDir tmp(std::string("norm_impl_") + d.name);
    std::vector<double> losses[2];
    for (int composed = 0; composed < 2; ++composed) {
      const fs::path run = tmp.path / (composed ? "composed" : "fused");
      const std::string args = d.flags + " --norm layernorm --threads 1 --log-every 1 --seed 5 --norm-impl " +
                               (composed ? "composed" : "fused") + " --out " + run.string();
      std::string output;
      REQUIRE_MESSAGE(rg::test::run_program(d.binary, args, tmp.path, output) == 0, output);
      for (const auto& line : rg::test::metric_lines(run, "train"))
        losses[composed].push_back(line["loss"].get<double>());
    }
    REQUIRE(losses[0].size() == 6);
    REQUIRE(losses[1].size() == losses[0].size());
    // The first loss is the initial model's forward: fused and composed
    // differ only by float32 rounding inside each norm (≈ 1e-7 relative).
    // After that the runs may drift apart more: Adam's first updates are
    // nearly lr·sign(g), so a gradient element that is rounding noise in both
    // (a bias right before a norm that removes it) moves by a full lr either
    // way, and max-pooling's argmax can flip on a tiny difference. Within 1%
    // of the loss over six steps says both train the same model the same way.
    CHECK(losses[1][0] == doctest::Approx(losses[0][0]).epsilon(1e-5));
    for (size_t i = 1; i < losses[0].size(); ++i)
      CHECK_MESSAGE(std::fabs(losses[1][i] - losses[0][i]) <= 1e-2 * std::fabs(losses[0][i]),
                    "step " << i + 1 << ": fused " << losses[0][i] << ", composed " << losses[1][i]);
    std::ifstream config(tmp.path / "composed" / "config.json");
    CHECK(nlohmann::json::parse(config)["norm-impl"] == "composed");
    std::string output;
    CHECK(rg::test::run_program(d.binary, "--norm-impl unfused --out " + (tmp.path / "bad").string(), tmp.path,
                                output) == 2);
    CHECK_MESSAGE(output.find("--norm-impl: unfused not in {fused,composed}") != std::string::npos, output);
  }
}

TEST_CASE("--preact-shift: 0 changes nothing; C shifts every normalized input, which LayerNorm removes and RMSNorm sees") {
  TempDir tmp("preact_shift");
  auto first_losses = [&](const Driver& d, const std::string& norm, const std::string& shift_flag) {
    const fs::path run = tmp.path / (std::string(d.name) + norm + std::to_string(shift_flag.size()));
    const std::string args =
        d.flags + " --norm " + norm + " --threads 1 --log-every 1 --seed 5 " + shift_flag + " --overwrite --out " + run.string();
    std::string output;
    REQUIRE_MESSAGE(rg::test::run_program(d.binary, args, tmp.path, output) == 0, output);
    std::vector<double> losses;
    for (const auto& line : rg::test::metric_lines(run, "train")) losses.push_back(line["loss"].get<double>());
    return losses;
  };
  // No offset is created at 0: every driver trains the same model, bit for bit.
  const Driver transformer{"transformer", RG_TRANSFORMER_BIN,
                           "--vocab-size 1000 --model-size 32 --ffn 64 --layers 1 --batch-tokens 1000 --warmup 10 "
                           "--synthetic-max-words 6 --synthetic-pairs 300 --valid-limit 20 --valid-beam 1 --beam 1 "
                           "--eval-every 6 --steps 6"};
  for (const Driver& d : {kDrivers[0], kDrivers[1], kDrivers[2], kDrivers[3], transformer}) {
    INFO(std::string(d.name));
    const auto unshifted = first_losses(d, "rmsnorm", "");
    CHECK(unshifted.size() == 6);
    CHECK(unshifted == first_losses(d, "rmsnorm", "--preact-shift 0"));
  }
  for (const Driver& d : {kDrivers[0], kDrivers[2]}) {  // cifar10, attentive_reader
    INFO(std::string(d.name));
    // At the first step the shifted LayerNorm model computes the unshifted one's
    // loss (up to rounding: x + 4 then minus its mean); RMSNorm's changes.
    const double layernorm = first_losses(d, "layernorm", "")[0];
    CHECK(first_losses(d, "layernorm", "--preact-shift 4")[0] == doctest::Approx(layernorm).epsilon(1e-4));
    const double rmsnorm = first_losses(d, "rmsnorm", "")[0];
    CHECK(std::fabs(first_losses(d, "rmsnorm", "--preact-shift 4")[0] - rmsnorm) > 1e-3 * std::fabs(rmsnorm));
  }
}
