"""PyTorch side of bench_gru: torch.nn.GRUCell, batch 80, input 512, hidden 1024.

Usage: /usr/bin/python3 bench/bench_gru_torch.py --threads N [--repeats R]
Parameter gradients accumulate between runs as in ours (they are not reset).
"""
import torch

import torch_timing


def main():
    args = torch_timing.parse_args(torch_timing.op_parser(repeats=30))
    batch, inp, hid = 80, 512, 1024
    cell = torch.nn.GRUCell(inp, hid)
    x = torch.randn(batch, inp, requires_grad=True)
    h = (0.5 * torch.randn(batch, hid)).requires_grad_()
    dy = torch.randn(batch, hid)
    fwd, both = torch_timing.forward_and_backward_ms(args.repeats, lambda: cell(x, h), dy, (x, h))
    torch_timing.print_json({"op": "gru_cell", "norm": "torch.nn.GRUCell", "batch": batch, "input": inp,
                             "hidden": hid, "threads": args.threads, "fwd_ms": round(fwd, 4),
                             "fwd_bwd_ms": round(both, 4)})


if __name__ == "__main__":
    main()
