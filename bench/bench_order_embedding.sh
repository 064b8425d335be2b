#!/usr/bin/env bash
# One training step of the order-embedding model (batch 128, word vectors
# 300, GRU 1024, image features 2048, captions of 6–17 words), ours against
# the same model in PyTorch (bench/order_embedding_torch.py), with each norm
# and both similarities, at 1 and 2 threads, in the same run. ROUNDS (default
# 2) interleaved rounds, median of the rounds' medians. The issue's targets:
# ours ≤ 0.9× PyTorch's step, and our RMSNorm step faster than our LayerNorm
# step.
#
#   bench/bench_order_embedding.sh            # THREADS="1 2" NORMS=... METHODS=... ROUNDS=2
set -euo pipefail
source "$(dirname "$0")/common.sh"
# shellcheck disable=SC2086  # METHODS is a list: one word a similarity
similarities=$(printf 'method=%s ' ${METHODS:-order cosine})
model_sweep order_embedding order_embedding_torch.py "none layernorm rmsnorm prmsnorm" "$similarities" \
  --steps 5 --warmup 2
/usr/bin/python3 bench/model_step_table.py "$lines"
