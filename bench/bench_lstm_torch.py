"""PyTorch side of bench_lstm: torch.nn.LSTMCell at batch 64, input 240, hidden 240 and 1024.

Usage: /usr/bin/python3 bench/bench_lstm_torch.py --threads N [--repeats R]
Forward+backward is from dL/dh, as in ours. Parameter gradients accumulate
between runs as in ours (they are not reset).
"""
import argparse
import json
import statistics
import time

import torch


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
    batch = 64
    for inp, hid in ((240, 240), (240, 1024)):
        cell = torch.nn.LSTMCell(inp, hid)
        x = torch.randn(batch, inp, requires_grad=True)
        h = (0.5 * torch.randn(batch, hid)).requires_grad_()
        c = (0.5 * torch.randn(batch, hid)).requires_grad_()
        dy = torch.randn(batch, hid)
        with torch.no_grad():
            fwd = median_ms(args.repeats, lambda: cell(x, (h, c)))

        def fwd_bwd():
            x.grad = h.grad = c.grad = None
            cell(x, (h, c))[0].backward(dy)

        both = median_ms(args.repeats, fwd_bwd)
        print(json.dumps({"op": "lstm_cell", "norm": "torch.nn.LSTMCell", "batch": batch, "input": inp,
                          "hidden": hid, "threads": args.threads, "fwd_ms": round(fwd, 4),
                          "fwd_bwd_ms": round(both, 4)}), flush=True)


if __name__ == "__main__":
    main()
