"""PyTorch side of bench_conv: torch.nn.functional.conv2d on the same ConvPool-CNN-C
layer shapes, forward and forward+backward (input, weight and bias gradients).

Usage: /usr/bin/python3 bench/bench_conv_torch.py --threads N [--repeats R] [--batch B]
"""
import torch
import torch.nn.functional as F

import torch_timing

LAYERS = [  # name, in, out, size, kernel, padding (as bench_conv.cpp)
    ("conv1 3x3 3-96 @32", 3, 96, 32, 3, 1), ("conv2,3 3x3 96-96 @32", 96, 96, 32, 3, 1),
    ("conv4 3x3 96-192 @16", 96, 192, 16, 3, 1), ("conv5,6 3x3 192-192 @16", 192, 192, 16, 3, 1),
    ("conv7 3x3 192-192 @8 nopad", 192, 192, 8, 3, 0), ("conv8,9 1x1 192-192 @6", 192, 192, 6, 1, 0),
]


def main():
    parser = torch_timing.op_parser(repeats=10)
    parser.add_argument("--batch", type=int, default=100)
    args = torch_timing.parse_args(parser)
    for name, cin, cout, size, k, pad in LAYERS:
        x = torch.randn(args.batch, cin, size, size, requires_grad=True)
        w = (0.05 * torch.randn(cout, cin, k, k)).requires_grad_()
        b = torch.zeros(cout, requires_grad=True)
        out = size + 2 * pad - k + 1
        dy = torch.randn(args.batch, cout, out, out)
        fwd, both = torch_timing.forward_and_backward_ms(args.repeats, lambda: F.conv2d(x, w, b, padding=pad), dy,
                                                         (x, w, b), warmup=2)
        torch_timing.print_json({"op": "conv2d", "impl": "torch", "layer": name, "batch": args.batch,
                                 "threads": args.threads, "fwd_ms": round(fwd, 3), "fwd_bwd_ms": round(both, 3)})


if __name__ == "__main__":
    main()
