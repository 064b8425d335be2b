#!/usr/bin/env python3
"""The cost model of data-parallel training behind docs/scaling.md.

    python3 scripts/scaling_model.py > /tmp/tables.md

Inputs, per model: its parameters (bench_step at the benchmark sizes) and
its one-thread step time on one machine (BENCHMARKS.md, RMSNorm rows). The
model of one step on N machines, each with a share of the work:

  compute   T            (weak scaling: each machine keeps the benchmark batch)
            T / N        (strong scaling: the global batch stays the benchmark's)
  gradient  S = 4 · parameters bytes, summed in B = ceil(S / bucket) buckets
  ring      C = 2 (N − 1) / N · S / bandwidth  +  2 (N − 1) · B · latency
            (a ring allreduce sends and receives 2(N−1)/N of the bytes per
            process, in 2(N−1) rounds, each paying a message's latency)
  step      no overlap:   compute + C
            overlap:      max(compute, C_bytes_before_last_bucket) + C / B
            (backward is ~2/3 of a step; buckets start while it runs, so all
            but the last bucket's share can hide behind compute)

Efficiency is (one machine's time per example) / (N machines' time per
example): T / step for weak scaling, (T / N) / step for strong.
"""
import math

# model: (parameters, one-thread step ms on this machine, examples in its batch)
MODELS = {
    "ConvPool-CNN-C (width 0.5, batch 100)": (353_924, 777.0, 100),
    "order-embedding (batch 128)": (7_074_720, 614.0, 128),
    "attentive reader (batch 64)": (9_978_721, 1932.0, 64),
    "RNNSearch (batch 80)": (8_721_217, 753.0, 80),
    "Transformer (4,096 tokens a side, 186 sentences)": (9_621_760, 2844.0, 186),
}
LINKS = {"10 Gbit/s": 10e9 / 8, "100 Gbit/s": 100e9 / 8}
LATENCY_S = 30e-6          # one MPI message over TCP on Ethernet, an assumption stated in docs/scaling.md
BUCKET_BYTES = 25 * 2**20
MACHINES = [2, 4, 8, 16, 32, 64, 128]
BACKWARD_SHARE = 2.0 / 3.0


def step_seconds(compute_s, params, n, bandwidth, overlap):
    size = 4.0 * params
    buckets = max(1, math.ceil(size / BUCKET_BYTES))
    ring = 2.0 * (n - 1) / n
    comm = ring * size / bandwidth + 2 * (n - 1) * buckets * LATENCY_S
    if not overlap:
        return compute_s + comm
    hidden_window = BACKWARD_SHARE * compute_s
    last = comm / buckets
    return compute_s - hidden_window + max(hidden_window, comm - last) + last


def table(weak):
    kind = "weak scaling (each machine keeps the batch)" if weak else "strong scaling (one global batch)"
    print(f"\n### {kind}: efficiency with overlap (without)\n")
    print("| model | link | " + " | ".join(f"N = {n}" for n in MACHINES) + " |")
    print("|---|---|" + "---|" * len(MACHINES))
    for name, (params, ms, batch) in MODELS.items():
        for link, bandwidth in LINKS.items():
            cells = []
            for n in MACHINES:
                if not weak and n > batch:  # a machine would get no example
                    cells.append("—")
                    continue
                compute = ms / 1e3 if weak else ms / 1e3 / n
                ideal = compute
                with_overlap = ideal / step_seconds(compute, params, n, bandwidth, True)
                without = ideal / step_seconds(compute, params, n, bandwidth, False)
                cells.append(f"{100 * with_overlap:.0f}% ({100 * without:.0f}%)")
            print(f"| {name} | {link} | " + " | ".join(cells) + " |")


def main():
    print("| model | parameters | gradient MiB | buckets of 25 MiB | one-thread step ms |")
    print("|---|---|---|---|---|")
    for name, (params, ms, _) in MODELS.items():
        size = 4 * params
        print(f"| {name} | {params:,} | {size / 2**20:.1f} | {max(1, math.ceil(size / BUCKET_BYTES))} | {ms:.0f} |")
    table(weak=True)
    table(weak=False)


if __name__ == "__main__":
    main()
