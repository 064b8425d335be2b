"""PyTorch side of bench_norms: the same shapes and JSON lines.

  layer_norm      torch.nn.functional.layer_norm (PyTorch's fused kernel)
  rmsnorm_torch   x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
  copy            x.clone()

Usage: /usr/bin/python3 bench/bench_norms_torch.py --threads N [--repeats R]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def median_ms(repeats, body):
    for _ in range(3):
        body()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        body()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    eps = 1e-5
    for rows, cols in [(4000, 1024), (2048, 512)]:
        x = torch.randn(rows, cols, requires_grad=True)
        dy = torch.randn(rows, cols)
        g = torch.ones(cols, requires_grad=True)
        b = torch.zeros(cols, requires_grad=True)
        ops = {
            "copy": lambda: x.detach().clone(),  # multi-threaded like ours
            "layer_norm": lambda: F.layer_norm(x, (cols,), g, b, eps),
            "rmsnorm_torch": lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g,
        }
        for name, op in ops.items():
            with torch.no_grad():
                fwd = median_ms(args.repeats, op)

            def fwd_bwd():
                x.grad = g.grad = b.grad = None
                op().backward(dy)

            both = median_ms(args.repeats, fwd_bwd) if name != "copy" else 0.0
            print(json.dumps({"op": name, "rows": rows, "cols": cols, "threads": args.threads,
                              "fwd_ms": round(fwd, 4), "fwd_bwd_ms": round(both, 4),
                              "fwd_gbps": round(2 * rows * cols * 4 / (fwd * 1e6), 2)}), flush=True)


if __name__ == "__main__":
    main()
