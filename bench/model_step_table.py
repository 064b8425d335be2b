"""The table of one model's training step, ours (bench_step) against its PyTorch twin, from the JSON
lines that bench_attentive_reader.sh, bench_rnnsearch.sh and bench_order_embedding.sh collect.

Each program's line gives the median of its timed steps; a wrapper runs several rounds, and the table
shows the median over the rounds per thread count and norm (and per similarity, for the
order-embedding lines, which carry a "method"): ours, PyTorch's, ours ÷ PyTorch and ours ÷ our
LayerNorm step. When the twin reports its parameter count, a second table sets both counts side by
side: a difference means the two programs do not build the same model, and their times do not compare.

    /usr/bin/python3 bench/model_step_table.py LINES.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

from norm_impl_table import ORDER


def cell(value, spec):
    """A number in a table cell, or a dash where one side did not run (a norm only one side has)."""
    return "—" if value is None else format(value, spec)


def step_table(ms, by_method):
    """ms: (impl, norm, method, threads) -> median ms per step. When the twin also ran under
    torch.compile (impl "torch.compile"), two more columns give that time and ours ÷ it."""
    method_column = " similarity |" if by_method else ""
    compiled = any(impl == "torch.compile" for impl, _, _, _ in ms)
    compile_columns = " torch.compile ms/step | ours ÷ torch.compile |" if compiled else ""
    print(f"| threads |{method_column} norm | ours ms/step | PyTorch ms/step | ours ÷ PyTorch |{compile_columns} "
          "ours ÷ our LayerNorm |")
    print("|---|---|---|---|---|---|" + ("---|" if by_method else "") + ("---|---|" if compiled else ""))
    for (impl, norm, method, t), v in sorted(ms.items(), key=lambda kv: (kv[0][3], kv[0][2] or "",
                                                                         ORDER.get(kv[0][1], 9))):
        if impl != "rmsgrad":
            continue
        torch = ms.get(("torch", norm, method, t))
        ln = ms.get(("rmsgrad", "layernorm", method, t))
        method_cell = f" {method} |" if by_method else ""
        compile_cells = ""
        if compiled:
            inductor = ms.get(("torch.compile", norm, method, t))
            compile_cells = f" {cell(inductor, '.0f')} | {cell(inductor and v / inductor, '.2f')} |"
        print(f"| {t} |{method_cell} {norm} | {v:.0f} | {cell(torch, '.0f')} | {cell(torch and v / torch, '.2f')} "
              f"|{compile_cells} {cell(ln and v / ln, '.3f')} |")


def parameter_table(params):
    """params: (impl, norm) -> parameter count."""
    print("| norm | our parameters | PyTorch parameters |")
    print("|---|---|---|")
    for norm in sorted({n for _, n in params}, key=lambda n: ORDER.get(n, 9)):
        ours, theirs = params.get(("rmsgrad", norm)), params.get(("torch", norm))
        flag = "" if ours == theirs else "  ← differ"
        print(f"| {norm} | {ours} | {theirs}{flag} |")


def main():
    runs, params = defaultdict(list), {}
    for line in open(sys.argv[1]):
        if line.strip():
            r = json.loads(line)
            runs[(r["impl"], r["norm"], r.get("method"), r["threads"])].append(r["ms_per_step"])
            if "parameters" in r:
                params[(r["impl"], r["norm"])] = r["parameters"]
    ms = {k: statistics.median(v) for k, v in runs.items()}
    step_table(ms, by_method=any(method is not None for _, _, method, _ in ms))
    if any(impl == "torch" for impl, _ in params):
        print()
        parameter_table(params)


if __name__ == "__main__":
    main()
