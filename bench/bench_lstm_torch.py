"""PyTorch side of bench_lstm: torch.nn.LSTMCell at batch 64, input 240, hidden 240 and 1024.

Usage: /usr/bin/python3 bench/bench_lstm_torch.py --threads N [--repeats R]
Forward+backward is from dL/dh, as in ours. Parameter gradients accumulate
between runs as in ours (they are not reset).
"""
import torch

import torch_timing


def main():
    args = torch_timing.parse_args(torch_timing.op_parser(repeats=30))
    batch = 64
    for inp, hid in ((240, 240), (240, 1024)):
        cell = torch.nn.LSTMCell(inp, hid)
        x = torch.randn(batch, inp, requires_grad=True)
        h = (0.5 * torch.randn(batch, hid)).requires_grad_()
        c = (0.5 * torch.randn(batch, hid)).requires_grad_()
        dy = torch.randn(batch, hid)
        fwd, both = torch_timing.forward_and_backward_ms(args.repeats, lambda: cell(x, (h, c))[0], dy, (x, h, c))
        torch_timing.print_json({"op": "lstm_cell", "norm": "torch.nn.LSTMCell", "batch": batch, "input": inp,
                                 "hidden": hid, "threads": args.threads, "fwd_ms": round(fwd, 4),
                                 "fwd_bwd_ms": round(both, 4)})


if __name__ == "__main__":
    main()
