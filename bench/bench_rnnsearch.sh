#!/usr/bin/env bash
# One training step of RNNSearch as in the paper's Multi30k recipe (batch 80,
# word vectors 256, GRUs of 256 units, attention 512, vocabularies of 8000
# subwords, sentences of 13–22 subwords, dropout 0.2, label smoothing 0.1,
# global clip 1, Adam), ours against the same model in PyTorch
# (bench/rnnsearch_torch.py), with each norm inside the GRUs, the attention
# and the deep output, at 1 and 2 threads, in the same run.
# ROUNDS (default 2) interleaved rounds, median of the rounds' medians.
# BUILD_DIR (default build) picks the build tree, configured by
# scripts/build.sh when it is the default.
#
#   bench/bench_rnnsearch.sh            # THREADS="1 2" NORMS=... ROUNDS=2 STEPS=5 WARMUP=2
#
# That both compute the same model: bench_step --model rnnsearch --dump DIR --norm N (small
# sizes), then rnnsearch_torch.py --check DIR.
set -euo pipefail
source "$(dirname "$0")/common.sh"
model_sweep rnnsearch rnnsearch_torch.py "none layernorm rmsnorm prmsnorm" "" \
  --steps "${STEPS:-5}" --warmup "${WARMUP:-2}"
/usr/bin/python3 bench/model_step_table.py "$lines"
