#!/usr/bin/env python3
"""The cost model of data-parallel training behind docs/scaling.md, fed with
what two hosts measured (bench/bench_hosts.sh's lines).

    python3 scripts/scaling_model.py docs/data_parallel_hosts.jsonl > /tmp/tables.md

Inputs, per model, from two hosts joined by a link of each measured rate:
the gradient (S = 4 · parameters bytes in B buckets, the embeddings' rows
gathered where the reducer gathers them), one machine's step T
(the 1-process step beside a twin: the same load on the cores as the two
hosts, no communication), the sums alone C2 and the communication left exposed
after backward, hence the time hidden behind backward H = C2 − exposed. Per
link rate, the allreduce curve of two hosts gives the link's cost: a time of
α + bytes / β per sum (least squares over 1–64 MiB).

The model of one step on N machines:

  ring      C(N) = 2 (N − 1) / N · S / β  +  2 (N − 1) · B · α
            (a ring allreduce sends and receives 2(N−1)/N of the bytes per
            process, in 2(N−1) rounds, each paying a message's latency; an
            embedding whose rows are gathered instead costs (N − 1) · G / β
            for G bytes of rows per process, while N · G stays under half
            its table, which is when the reducer gathers)
  weak      step = T + max(0, C(N) − H)
            (each machine keeps its batch: backward, and with it the time it
            hides, stays as measured; what more machines add is exposed)
  strong    step = T / N + max(0, C(N) − H / N)
            (one global batch split N ways: backward, and what it can hide,
            shrink with it)

For two machines the model's step, T + C(2) − H with C(2) from the link's
fitted cost, is set beside the measured one. Beyond the measured rates: a
100 Gbit/s link is taken as the 10 Gbit/s one with β ten times larger (the
same fraction of its line rate) and α = 30 µs per message, an assumption:
these hosts' veth links have no wire, and netem, which would add latency,
is missing here. Efficiency is one machine's time per example ÷ N machines'.
"""
import json
import math
import sys

NAMES = {
    "convpool": "ConvPool-CNN-C (width 0.5, batch 100)",
    "rnnsearch": "RNNSearch (batch 80)",
    "reader": "attentive reader (batch 64)",
    "order_embedding": "order-embedding (batch 128)",
    "transformer": "Transformer (186 sentences)",
}
MACHINES = [2, 4, 8, 16, 32, 64, 128]
LATENCY_S = 30e-6  # one MPI message over TCP on Ethernet, assumed beyond the measured links


def link_cost(rows):
    """(α seconds, β bytes per second) of a two-host sum, fitted to time = α + bytes / β."""
    points = [(r["bytes"], r["median_ms"] / 1e3) for r in rows if r["bytes"] >= 2**20]
    n = len(points)
    mx = sum(b for b, _ in points) / n
    my = sum(t for _, t in points) / n
    slope = sum((b - mx) * (t - my) for b, t in points) / sum((b - mx) ** 2 for b, _ in points)
    return max(my - slope * mx, 0.0), 1.0 / slope


def ring(n, size, buckets, alpha, beta):
    return 2.0 * (n - 1) / n * size / beta + 2 * (n - 1) * buckets * alpha


def communication(n, two, alpha, beta):
    """One step's sums on n machines: the dense buckets in a ring; the
    embeddings' buckets gather rows (each process receives every other's,
    (n − 1) · G bytes, in n − 1 rounds for the lengths and n − 1 for the rows)
    while the reducer would choose that: rows × n ≤ half the table
    (dist/gradient_reducer.h), else a ring of the whole tables."""
    sparse = 4.0 * two.get("gathered_values", 0)
    gathers = two.get("gather_buckets", 0)
    rows = two.get("gathered_bytes", 0)
    c = ring(n, 4.0 * two["parameters"] - sparse, two["buckets"] - gathers, alpha, beta)
    if gathers and n * rows <= 0.5 * sparse:
        return c + (n - 1) * rows / beta + 2 * (n - 1) * gathers * alpha
    return c + ring(n, sparse, gathers, alpha, beta)


def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    steps = [r for r in rows if "ms_per_step" in r]
    rates = list(dict.fromkeys(r["run"] for r in rows if "bytes" in r))
    links = {rate: link_cost([r for r in rows if r.get("run") == rate and "bytes" in r]) for rate in rates}
    models = list(dict.fromkeys(r["model"] for r in steps))
    inputs = {}
    for m in models:
        run = {r["run"]: r for r in steps if r["model"] == m}
        inputs[m] = run

    print("### The links, as two hosts measured them\n")
    print("| link | fitted α per sum | fitted β | β ÷ line rate |")
    print("|---|---|---|---|")
    for rate, (alpha, beta) in links.items():
        line_rate = float(rate.replace("gbit", "")) * 1e9 / 8
        print(f"| {rate} | {1e3 * alpha:.2f} ms | {beta / 1e9:.3f} GB/s | {beta / line_rate:.2f} |")

    print("\n### Two hosts: the model against the measurement\n")
    print("| model | gradient MiB | buckets | T ms (beside a twin) | link | sums alone ms: measured / model "
          "| hidden ms (fraction) | 2-host step ms: measured / model | model ÷ measured |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in models:
        run = inputs[m]
        t = run["twin"]["ms_per_step"] / 1e3
        for rate in rates:
            two = run[rate]
            size = 4.0 * two["parameters"]
            alpha, beta = links[rate]
            c2 = communication(2, two, alpha, beta)
            hidden = (two["comm_alone_ms"] - two["exposed_comm_ms"]) / 1e3
            model = t + max(0.0, c2 - hidden)
            measured = two["ms_per_step"] / 1e3
            print(f"| {NAMES.get(m, m)} | {size / 2**20:.1f} | {two['buckets']} | {1e3 * t:.0f} | {rate} | "
                  f"{two['comm_alone_ms']:.0f} / {1e3 * c2:.0f} | {1e3 * hidden:.0f} ({two['hidden_fraction']:.2f}) | "
                  f"{1e3 * measured:.0f} / {1e3 * model:.0f} | {model / measured:.2f} |")

    if "10gbit" not in links:
        return
    alpha10, beta10 = links["10gbit"]
    beyond = {"10 Gbit/s": (max(alpha10, LATENCY_S), beta10), "100 Gbit/s": (LATENCY_S, 10 * beta10)}
    for weak in (True, False):
        kind = "weak scaling (each machine keeps its batch)" if weak else "strong scaling (one global batch)"
        print(f"\n### {kind}: efficiency, from the overlap measured at 10 Gbit/s\n")
        print("| model | link | " + " | ".join(f"N = {n}" for n in MACHINES) + " |")
        print("|---|---|" + "---|" * len(MACHINES))
        for m in models:
            two = inputs[m]["10gbit"]
            t = inputs[m]["twin"]["ms_per_step"] / 1e3
            hidden = max(0.0, (two["comm_alone_ms"] - two["exposed_comm_ms"]) / 1e3)
            batch = two.get("batch", 0)
            for link, (alpha, beta) in beyond.items():
                cells = []
                for n in MACHINES:
                    if not weak and batch and n > batch:
                        cells.append("—")  # a machine would get no example
                        continue
                    c = communication(n, two, alpha, beta)
                    compute = t if weak else t / n
                    step = compute + max(0.0, c - (hidden if weak else hidden / n))
                    cells.append(f"{100 * compute / step:.0f}%")
                print(f"| {NAMES.get(m, m)} | {link} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
