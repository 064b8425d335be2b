"""The table of bench/bench_peers.sh: one training step of each model, ours (bench_step) against every
peer — the PyTorch twin eager ("torch"), under torch.compile ("torch.compile") and the JAX twin
("jax") — from the JSON lines the wrapper collects, each tagged with its "bench_model".

Each line gives the median of one program's timed steps ("ms_per_step", or "step_ms" for the ConvPool
twins); the table shows the median over the rounds per model, precision (f32, or bf16: ours with
--precision bf16, the PyTorch twins under autocast) and thread count, a dash where a peer did
not run, and ours ÷ the fastest peer (below 1: ours is faster than every peer).

Below it, a note for every peer whose line reports a size or parameter count other than ours: a peer
that ran another model's sizes is not timing the same step.

    /usr/bin/python3 bench/peers_table.py LINES.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

PEERS = [("torch", "torch eager"), ("torch.compile", "torch.compile"), ("jax", "jax.jit")]
# Fields that are not sizes: who ran, how, and what was measured.
NOT_SIZES = {"bench_model", "impl", "model", "norm", "norm_impl", "threads", "precision", "communication", "ms_per_step",
             "ms_min", "step_ms", "steps", "peak_rss_mb", "compile_s", "parameters"}
# A twin's name for one of bench_step's sizes.
ALIASES = {"emb": "word_dim"}


def cell(value, spec):
    return "—" if value is None else format(value, spec)


def size_notes(lines):
    """One line per peer line whose sizes (those it shares with ours) or parameter count differ from
    ours at the same model, each difference named once."""
    ours = {}
    for r in lines:
        if r["impl"] == "rmsgrad":
            ours.setdefault(r["bench_model"], r)
    notes = []
    for r in lines:
        mine = ours.get(r["bench_model"])
        if r["impl"] == "rmsgrad" or mine is None:
            continue
        for key, value in r.items():
            name = ALIASES.get(key, key)
            if (key not in NOT_SIZES or key == "parameters") and name in mine and mine[name] != value:
                note = f"{r['bench_model']}: {r['impl']} {key} {value}, ours {mine[name]}"
                if note not in notes:
                    notes.append(note)
    return notes


def main():
    lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    runs = defaultdict(list)
    models, norms = [], set()
    for r in lines:
        model = r["bench_model"]
        if model not in models:
            models.append(model)
        norms.add(r["norm"])
        runs[(model, r.get("precision", "f32"), r["threads"], r["impl"])].append(r.get("ms_per_step", r.get("step_ms")))
    ms = {k: statistics.median(v) for k, v in runs.items()}
    rounds = max((len(v) for v in runs.values()), default=0)
    print(f"norm {', '.join(sorted(norms))}; median over {rounds} round(s) of each program's median step.\n")
    print("| model | precision | threads | ours ms | " + " | ".join(f"{title} ms" for _, title in PEERS)
          + " | ours ÷ fastest peer | fastest peer |")
    print("|---|---|---|---|" + "---|" * len(PEERS) + "---|---|")
    for model in models:
        for precision in sorted({p for m, p, _, _ in ms if m == model}, key=lambda p: p != "f32"):
            for t in sorted({t for m, p, t, _ in ms if m == model and p == precision}):
                ours = ms.get((model, precision, t, "rmsgrad"))
                peers = {impl: ms.get((model, precision, t, impl)) for impl, _ in PEERS}
                ran = {impl: v for impl, v in peers.items() if v is not None}
                fastest = min(ran, key=ran.get) if ran else None
                ratio = ours / ran[fastest] if ours is not None and fastest else None
                title = dict(PEERS)[fastest] if fastest else "—"
                print(f"| {model} | {precision} | {t} | {cell(ours, '.1f')} | "
                      + " | ".join(cell(peers[impl], ".1f") for impl, _ in PEERS)
                      + f" | {cell(ratio, '.2f')} | {title} |")
    notes = size_notes(lines)
    if notes:
        print("\nSizes that differ from ours (those times do not compare):")
        for note in notes:
            print(f"  - {note}")


if __name__ == "__main__":
    main()
