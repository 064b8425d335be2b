#!/usr/bin/env bash
# One training step of the bidirectional attentive reader (batch 64, word
# vectors 240, LSTMs of 240 units, documents of 250–300 tokens, queries of
# 12–20, 10 candidates, vocabulary 10000, dropout 0.5, global clip 10, Adam),
# ours against the same model in PyTorch (bench/attentive_reader_torch.py),
# with each norm inside the LSTMs, at 1 and 2 threads, in the same run.
# ROUNDS (default 2) interleaved rounds, median of the rounds' medians.
# BUILD_DIR (default build) picks the build tree, configured by
# scripts/build.sh when it is the default.
#
#   bench/bench_attentive_reader.sh            # THREADS="1 2" NORMS=... ROUNDS=2 STEPS=5 WARMUP=2
set -euo pipefail
source "$(dirname "$0")/common.sh"
model_sweep reader attentive_reader_torch.py "none layernorm rmsnorm prmsnorm batchnorm" "" \
  --steps "${STEPS:-5}" --warmup "${WARMUP:-2}"
/usr/bin/python3 bench/model_step_table.py "$lines"
