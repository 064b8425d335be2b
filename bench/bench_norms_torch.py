"""PyTorch side of bench_norms: the same shapes and JSON lines.

  layer_norm      torch.nn.functional.layer_norm (PyTorch's fused kernel)
  rmsnorm_torch   x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
  copy            x.clone()

Usage: /usr/bin/python3 bench/bench_norms_torch.py --threads N [--repeats R]
"""
import torch
import torch.nn.functional as F

import torch_timing


def main():
    args = torch_timing.parse_args(torch_timing.op_parser(repeats=30))
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
            if name == "copy":  # the memory-bandwidth yardstick: nothing to differentiate
                with torch.no_grad():
                    fwd, both = torch_timing.median_ms(args.repeats, op), 0.0
            else:
                fwd, both = torch_timing.forward_and_backward_ms(args.repeats, op, dy, (x, g, b))
            torch_timing.print_json({"op": name, "rows": rows, "cols": cols, "threads": args.threads,
                                     "fwd_ms": round(fwd, 4), "fwd_bwd_ms": round(both, 4),
                                     "fwd_gbps": round(2 * rows * cols * 4 / (fwd * 1e6), 2)})


if __name__ == "__main__":
    main()
