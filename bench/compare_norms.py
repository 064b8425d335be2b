"""Joins bench_norms (ours) and bench_norms_torch.py output into the table of
BENCHMARKS.md, with the ratios the layer-zoo issue asks for.

Usage: python3 bench/compare_norms.py ours.jsonl torch.jsonl
"""
import json
import sys


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                rows[(r["op"], r["rows"], r["cols"], r["threads"])] = r
    return rows


def main():
    ours, torch = load(sys.argv[1]), load(sys.argv[2])
    keys = sorted({(k[1], k[2], k[3]) for k in ours}, key=lambda k: (-k[0], k[2]))
    print("| shape | threads | copy GB/s | RMSNorm fwd GB/s | fwd ÷ copy | RMS ÷ our LN (f+b) | RMS ÷ torch layer_norm (f+b) "
          "| RMS ÷ torch composed RMS (f+b) | pRMS ÷ RMS (f+b) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rows, cols, threads in keys:
        get = lambda src, op: src[(op, rows, cols, threads)]
        rms, ln, prms, copy = (get(ours, o) for o in ("rmsnorm", "layernorm", "prmsnorm", "copy"))
        t_ln, t_rms = get(torch, "layer_norm"), get(torch, "rmsnorm_torch")
        print(f"| ({rows}, {cols}) | {threads} | {copy['fwd_gbps']:.1f} | {rms['fwd_gbps']:.1f} "
              f"| {rms['fwd_ms'] / copy['fwd_ms']:.2f} | {rms['fwd_bwd_ms'] / ln['fwd_bwd_ms']:.2f} "
              f"| {rms['fwd_bwd_ms'] / t_ln['fwd_bwd_ms']:.2f} | {rms['fwd_bwd_ms'] / t_rms['fwd_bwd_ms']:.3f} "
              f"| {prms['fwd_bwd_ms'] / rms['fwd_bwd_ms']:.2f} |")
    print()
    print("| shape | threads | op | ours fwd ms | ours fwd+bwd ms | torch op | torch fwd ms | torch fwd+bwd ms |")
    print("|---|---|---|---|---|---|---|---|")
    for rows, cols, threads in keys:
        for op, top in (("layernorm", "layer_norm"), ("rmsnorm", "rmsnorm_torch"), ("prmsnorm", ""), ("l2norm", "")):
            o = ours[(op, rows, cols, threads)]
            t = torch.get((top, rows, cols, threads))
            tf = f"{t['fwd_ms']:.3f} | {t['fwd_bwd_ms']:.3f}" if t else "— | —"
            print(f"| ({rows}, {cols}) | {threads} | {op} | {o['fwd_ms']:.3f} | {o['fwd_bwd_ms']:.3f} | {top or '—'} | {tf} |")


if __name__ == "__main__":
    main()
