#!/usr/bin/env bash
# One training step of the Transformer as in the paper's Table 4 recipe with the CPU-sized Multi30k
# model (d 256, FFN 1024, 4 heads, 3 encoder + 3 decoder layers, vocabularies of 8000 subwords, 186
# sentence pairs of 13–22 subwords: 4092 padded tokens a side, dropout 0.1, label smoothing 0.1,
# Adam β (0.9, 0.98), ε 1e-9, no clip), ours against the same model in PyTorch
# (bench/transformer_torch.py), with each norm in every encoder and decoder layer, at 1 and 2
# threads, in the same run.
# COMPILE=1 also times the twin under torch.compile (its CPU backend, Inductor), one column more.
# ROUNDS (default 2) interleaved rounds, median of the rounds' medians. POSITIONS (default "post")
# picks where the norms go: "post pre" runs both, with one table each. BUILD_DIR (default build)
# picks the build tree, configured by scripts/build.sh when it is the default.
#
#   bench/bench_transformer.sh          # THREADS="1 2" NORMS=... POSITIONS=post ROUNDS=2 STEPS=5 WARMUP=2
#
# That both compute the same model: bench_step --model transformer --dump DIR --norm N (small
# sizes), then transformer_torch.py --check DIR.
set -euo pipefail
source "$(dirname "$0")/common.sh"
for position in ${POSITIONS:-post}; do
  : >"$lines"  # one table per position
  model_sweep transformer transformer_torch.py "none layernorm rmsnorm prmsnorm" "position=$position" \
    --steps "${STEPS:-5}" --warmup "${WARMUP:-2}"
  if [ "${COMPILE:-0}" = 1 ]; then
    for t in ${THREADS:-1 2}; do
      for norm in ${NORMS:-none layernorm rmsnorm prmsnorm}; do
        twin "$t" transformer_torch.py --compile --norm "$norm" --position "$position" \
          --steps "${STEPS:-5}" --warmup "${WARMUP:-2}" | tee -a "$lines"
      done
    done
  fi
  echo "norm position: $position"
  /usr/bin/python3 bench/model_step_table.py "$lines"
  echo
done
