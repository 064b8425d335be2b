"""The table BENCHMARKS.md opens with: per model, precision and thread count, our training step, the
fastest peer's at the same precision (PyTorch eager, torch.compile, jax.jit; bf16 peers run under
CPU autocast), ours ÷ that peer, and the step over its best-library and FLOP-peak floors.

The step times and peers come from bench/bench_peers.sh's lines (KEEP_LINES), the floors from
bench/bench_floor.sh's (bench_floor's lines); medians where a file holds several rounds.

    /usr/bin/python3 bench/summary_table.py PEERS.jsonl FLOORS.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

NAMES = {"convpool": "ConvPool-CNN-C", "order_embedding": "order-embedding", "reader": "attentive reader",
         "rnnsearch": "RNNSearch", "transformer": "Transformer", "lm": "language model"}
PEERS = {"torch": "torch eager", "torch.compile": "torch.compile", "jax": "jax.jit"}


def main():
    steps = defaultdict(list)
    for line in open(sys.argv[1]):
        if line.strip():
            r = json.loads(line)
            key = (r["bench_model"], r.get("precision", "f32"), r["threads"], r["impl"])
            steps[key].append(r.get("ms_per_step", r.get("step_ms")))
    floors = defaultdict(list)
    for line in open(sys.argv[2]):
        if line.strip().startswith("{"):
            r = json.loads(line)
            floors[(r["model"], r.get("precision", "f32"), r["threads"])].append(r)
    ms = {k: statistics.median(v) for k, v in steps.items()}

    def floor(model, precision, threads, key):
        rows = floors.get((model, precision, threads))
        return statistics.median(r[key] for r in rows) if rows else None

    print("| model | precision | threads | ours ms | fastest peer ms | fastest peer | ours ÷ fastest peer | "
          "step ÷ best-library floor | step ÷ FLOP-peak floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    models = list(dict.fromkeys(m for m, _, _, _ in ms))
    for model in models:
        for precision in ["f32", "bf16"]:
            for threads in sorted({t for m, p, t, _ in ms if m == model and p == precision}):
                ours = ms.get((model, precision, threads, "rmsgrad"))
                peers = {impl: ms[(model, precision, threads, impl)] for impl in PEERS
                         if (model, precision, threads, impl) in ms}
                fastest = min(peers, key=peers.get) if peers else None
                best_floor = floor(model, precision, threads, "floor_ms")
                peak_floor = floor(model, precision, threads, "peak_floor_ms")
                floor_step = floor(model, precision, threads, "step_ms")

                def cell(x, spec):
                    return "—" if x is None else format(x, spec)

                print(f"| {NAMES.get(model, model)} | {precision} | {threads} | {cell(ours, '.0f')} | "
                      f"{cell(peers.get(fastest), '.0f')} | {PEERS.get(fastest, '—')} | "
                      f"{cell(ours / peers[fastest] if ours and fastest else None, '.2f')} | "
                      f"{cell(floor_step / best_floor if best_floor else None, '.2f')} | "
                      f"{cell(floor_step / peak_floor if peak_floor else None, '.2f')} |")


if __name__ == "__main__":
    main()
