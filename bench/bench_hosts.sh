#!/usr/bin/env bash
# Data-parallel steps across a network: two hosts made of network namespaces
# (scripts/hosts.sh), one process of one thread on each, joined by TCP links
# limited to each of RATES. Every model at its benchmark batch per process
# (bench/model_steps/), RMSNorm. Prints one table:
#
#   - the 1-process step alone (the other core idle) and beside a twin (two
#     independent processes at once: the same load on the machine as the two
#     hosts, with no communication);
#   - per rate: the 2-host step, its ratio to the twin step, the sums alone
#     (the same buckets, back to back, no compute), the exposed communication
#     (the time the last process to finish backward spends on the sums), and
#     the hidden fraction, 1 − exposed ÷ alone.
#
#   bench/bench_hosts.sh        # RATES="1gbit 10gbit" MODELS="convpool rnnsearch reader order_embedding transformer"
#   LINES_OUT=docs/data_parallel_hosts.jsonl bench/bench_hosts.sh   # keep the lines for scripts/scaling_model.py
#
# It first measures the links alone: bench_allreduce across the two hosts at each rate.
#
# Needs root. The hosts share this machine's two cores: the twin step, not the
# lone one, is what two real machines would each run.
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench bench_step
build_bench bench_allreduce
steps=${STEPS:-6}
warmup=${WARMUP:-2}
rates=${RATES:-1gbit 10gbit}
export RG_HOSTS_NET=rgbench RG_HOSTS_SUBNET=10.79.0 OMP_NUM_THREADS=1
scripts/hosts.sh up 2 > /dev/null
trap 'scripts/hosts.sh down; rm -rf "$scratch"' EXIT
step() { "$build/bin/bench_step" --norm rmsnorm --threads 1 --steps "$steps" --warmup "$warmup" "$@"; }
# The links alone: two hosts' sums from 64 KiB to 64 MiB, at each rate.
for rate in $rates; do
  scripts/hosts.sh rate "$rate"
  scripts/hosts.sh mpirun "$build/bin/bench_allreduce" --min-kib 64 --repeats 10 2> /dev/null |
    sed "s/^{/{\"run\": \"$rate\", /" | tee -a "$lines"
done
for model in ${MODELS:-convpool rnnsearch reader order_embedding transformer}; do
  step --model "$model" | sed 's/^{/{"run": "alone", /' | tee -a "$lines"
  step --model "$model" > "$scratch/twin" &
  step --model "$model" | sed 's/^{/{"run": "twin", /' | tee -a "$lines"
  wait
  for rate in $rates; do
    scripts/hosts.sh rate "$rate"
    scripts/hosts.sh mpirun "$build/bin/bench_step" --model "$model" --norm rmsnorm --threads 1 --steps "$steps" \
      --warmup "$warmup" 2> /dev/null | sed "s/^{/{\"run\": \"$rate\", /" | tee -a "$lines"
  done
done
[ -n "${LINES_OUT:-}" ] && cp "$lines" "$LINES_OUT" # for scripts/scaling_model.py
python3 - "$lines" "$rates" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "ms_per_step" in l]
rates = sys.argv[2].split()
models = list(dict.fromkeys(r["model"] for r in rows))
head = "| model | 1 process alone ms | beside a twin ms |"
rule = "|---|---|---|"
for rate in rates:
    head += f" {rate}: 2 hosts ms | ÷ twin | sums alone ms | exposed ms | hidden |"
    rule += "---|---|---|---|---|"
print("\n" + head + "\n" + rule)
for m in models:
    run = {r["run"]: r for r in rows if r["model"] == m}
    line = f"| {m} | {run['alone']['ms_per_step']:.0f} | {run['twin']['ms_per_step']:.0f} |"
    for rate in rates:
        two = run[rate]
        line += (f" {two['ms_per_step']:.0f} | {two['ms_per_step'] / run['twin']['ms_per_step']:.2f} | "
                 f"{two['comm_alone_ms']:.0f} | {two['exposed_comm_ms']:.0f} | {two['hidden_fraction']:.2f} |")
    print(line)
PY
