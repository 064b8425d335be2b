"""ConvPool-CNN-C in PyTorch, layer for layer as models/convpool_cnn.cpp, to time
a training step beside ours (bench/bench_convpool.sh).

    /usr/bin/python3 bench/convpool_torch.py --norm rmsnorm --width 0.5 --batch 100 --threads 2 --steps 10
        [--warmup 2] [--compile]

One training step = forward (Gaussian input noise σ 0.15, dropout 0.5 after each
max-pool), cross-entropy, backward and an Adam step. Norms as ours: after each
conv and the dense layer; on conv maps LayerNorm / RMSNorm / pRMSNorm / L2-Norm
normalize each sample's channel over H×W with a gain and bias per channel
(written with plain torch ops: torch 1.13 has no RMSNorm), BatchNorm per
channel, WeightNorm by torch.nn.utils.weight_norm; a layer followed by a norm
with a bias drops its own; ε 1e-6 inside the square root; pRMSNorm's RMS from
the first max(1, floor(n·p)) units, the 10-unit output layer using all units.
Prints one JSON line: {"impl": "torch", "norm", "width", "batch", "threads", "step_ms", "steps"}.
With --compile the loss (forward and, through AOTAutograd, backward) runs under torch.compile with its
CPU backend (Inductor), "impl" is then "torch.compile", and the compilation happens in the warm-up
steps (at least one), outside the timing; it applies to the timing only, not to --data.

With --data it trains instead, as build/bin/cifar10 does, to compare what the
two reach on the same split (the aim: within 3 points of PyTorch):

    /usr/bin/python3 bench/convpool_torch.py --data ../shared/data/cifar10/cifar10-train-jpeg.tar.gz \
        --norm rmsnorm --width 0.5 --epochs 5 --threads 2 --out runs/real/torch-rmsnorm

The data is read here, independently of our C++ reader: the JPEG tarball
(train/<class>/NNNN.jpg) decoded with PIL, the official order restored from
labels/data_batch_*.labels beside it, the last --valid-size images held out;
(x − 127.5)/128; ZCA (regularisation 1e-5) fit on the training rows in float64
with numpy's eigh; Glorot-uniform weights and zero biases; Adam, batch 100,
lr 0.003 (0.0003 for none) constant for the first half then linearly to 0,
β1 0.9 then 0.5. <out>/metrics.jsonl has our drivers' format, so
build/bin/paper_table and scripts/plot_curves.py read it beside our runs.
WeightNorm's data-dependent initialisation is not reproduced here.
"""
import io
import json
import math
import statistics
import tarfile
import time
from pathlib import Path

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import recipe
import torch_timing


class RowNorm(nn.Module):
    """LayerNorm / RMSNorm / pRMSNorm / L2-Norm over the last axis (features) or H×W (channels)."""

    def __init__(self, kind, size, channels, p, eps):
        super().__init__()
        self.kind, self.channels, self.p, self.eps = kind, channels, p, eps
        self.gain = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))

    def forward(self, x):
        rows = x.flatten(2) if self.channels else x  # [N, C, HW] or [N, F]
        n = rows.shape[-1]
        if self.kind == "layernorm":
            mu = rows.mean(-1, keepdim=True)
            y = (rows - mu) * torch.rsqrt((rows - mu).pow(2).mean(-1, keepdim=True) + self.eps)
        else:
            k = max(1, math.floor(n * self.p)) if self.kind == "prmsnorm" else n
            if self.kind == "prmsnorm" and not self.channels and k < 4:
                k = n
            sq = rows[..., :k].pow(2)
            denom = sq.sum(-1, keepdim=True) if self.kind == "l2norm" else sq.mean(-1, keepdim=True)
            y = rows * torch.rsqrt(denom + self.eps)
        y = y.reshape(x.shape)
        shape = (1, -1, 1, 1) if self.channels else (1, -1)
        return y * self.gain.view(shape) + self.bias.view(shape)


def make_norm(kind, size, channels, p, eps):
    if kind in ("none", "weightnorm"):
        return nn.Identity()
    if kind == "batchnorm":
        return (nn.BatchNorm2d if channels else nn.BatchNorm1d)(size, eps=eps)
    return RowNorm(kind, size, channels, p, eps)


class ConvPoolCnnC(nn.Module):
    def __init__(self, norm, width, p=0.125, eps=1e-6, dropout=0.5, input_noise=0.15):
        super().__init__()
        self.dropout, self.input_noise = dropout, input_noise
        c1, c2 = max(1, round(96 * width)), max(1, round(192 * width))
        layer_bias = norm in ("none", "weightnorm")
        wn = (lambda m: nn.utils.weight_norm(m)) if norm == "weightnorm" else (lambda m: m)
        specs = [(3, c1, 3, 1), (c1, c1, 3, 1), (c1, c1, 3, 1), (c1, c2, 3, 1), (c2, c2, 3, 1), (c2, c2, 3, 1),
                 (c2, c2, 3, 0), (c2, c2, 1, 0), (c2, c2, 1, 0)]
        self.convs = nn.ModuleList(wn(nn.Conv2d(i, o, k, padding=pad, bias=layer_bias)) for i, o, k, pad in specs)
        self.norms = nn.ModuleList(make_norm(norm, o, True, p, eps) for _, o, _, _ in specs)
        self.dense = wn(nn.Linear(c2, 10, bias=layer_bias))
        self.dense_norm = make_norm(norm, 10, False, p, eps)

    def block(self, i, x):
        return F.leaky_relu(self.norms[i](self.convs[i](x)), 0.1)

    def forward(self, x):
        if self.training:
            x = x + self.input_noise * torch.randn_like(x)
        for i in range(3):
            x = self.block(i, x)
        x = F.dropout(F.max_pool2d(x, 2), self.dropout, self.training)
        for i in range(3, 6):
            x = self.block(i, x)
        x = F.dropout(F.max_pool2d(x, 2), self.dropout, self.training)
        for i in range(6, 9):
            x = self.block(i, x)
        return self.dense_norm(self.dense(x.mean(dim=(2, 3))))


def time_steps(args):
    """Median milliseconds of a training step on random images."""
    model = ConvPoolCnnC(args.norm, args.width, dropout=args.dropout, input_noise=args.input_noise)
    images = torch.randn(args.batch, 3, 32, 32)
    labels = torch.randint(0, 10, (args.batch,))

    def loss(images, labels):
        return F.cross_entropy(model(images), labels)

    step = torch_timing.compiled_step(args, list(model.parameters()), loss, images, labels)
    times, _ = torch_timing.timed_calls(step, args.steps, args.warmup)
    torch_timing.print_json({"impl": torch_timing.impl(args), "norm": args.norm,
                             "width": args.width, "batch": args.batch,
                             "threads": args.threads, "precision": args.precision,
                             "step_ms": round(statistics.median(times), 2),
                             "steps": args.steps, "peak_rss_mb": torch_timing.peak_rss_mb()})


def load_cifar_jpegs(archive, valid_size):
    """(train_x, train_y, valid_x, valid_y), images float32 [N, 3, 32, 32] in 0..255, official order."""
    from PIL import Image

    by_class = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and len(parts) == 3 and parts[0] == "train":
                by_class.setdefault(parts[1], []).append((parts[2], tar.extractfile(member).read()))
    classes = sorted(by_class)
    decoded = {}
    for c in classes:
        files = sorted(by_class[c])
        decoded[c] = np.stack([np.asarray(Image.open(io.BytesIO(data)).convert("RGB")) for _, data in files])
    labels_dir = Path(archive).parent / "labels"
    order = np.concatenate([np.fromfile(labels_dir / f"data_batch_{b}.labels", dtype=np.uint8) for b in range(1, 6)])
    taken = {c: 0 for c in classes}
    images = np.empty((len(order), 32, 32, 3), dtype=np.uint8)
    for i, label in enumerate(order):
        c = classes[label]
        images[i] = decoded[c][taken[c]]
        taken[c] += 1
    x = images.transpose(0, 3, 1, 2).astype(np.float32)
    y = order.astype(np.int64)
    return x[:-valid_size], y[:-valid_size], x[-valid_size:], y[-valid_size:]


def fit_zca(rows, reg=1e-5):
    """(mean, W) with W = U diag(1/sqrt(λ + reg)) Uᵀ from the pixel covariance, in float64."""
    rows = rows.astype(np.float64)
    mean = rows.mean(axis=0)
    centered = rows - mean
    cov = centered.T @ centered / rows.shape[0]
    eigenvalues, vectors = np.linalg.eigh(cov)
    w = (vectors / np.sqrt(np.maximum(eigenvalues, 0.0) + reg)) @ vectors.T
    return mean.astype(np.float32), w.astype(np.float32)


def train(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({**vars(args), "impl": "torch"}, indent=2) + "\n")
    metrics = open(out / "metrics.jsonl", "w")

    def log(record):
        metrics.write(json.dumps(record) + "\n")
        metrics.flush()
        print(json.dumps(record), flush=True)

    torch.manual_seed(args.seed)
    train_x, train_y, valid_x, valid_y = load_cifar_jpegs(args.data, args.valid_size)
    if args.train_size > 0:
        train_x, train_y = train_x[:args.train_size], train_y[:args.train_size]
    train_x, valid_x = (train_x - 127.5) / 128.0, (valid_x - 127.5) / 128.0
    mean, w = fit_zca(train_x.reshape(len(train_x), -1))
    whiten = lambda x: torch.from_numpy(((x.reshape(len(x), -1) - mean) @ w).reshape(x.shape))
    train_x, valid_x = whiten(train_x), whiten(valid_x)
    train_y, valid_y = torch.from_numpy(train_y), torch.from_numpy(valid_y)
    print(f"{len(train_y)} train, {len(valid_y)} valid, ZCA fitted", flush=True)

    model = ConvPoolCnnC(args.norm, args.width)
    for name, param in model.named_parameters():
        if param.dim() > 1:
            nn.init.xavier_uniform_(param)
        elif name.startswith(("convs.", "dense.")):
            nn.init.zeros_(param)  # layer biases; norm gains stay 1 and biases 0
    base_lr = args.lr
    adam = torch.optim.Adam(model.parameters(), lr=base_lr, betas=(args.beta1, args.beta2), eps=args.eps)
    per_epoch = len(train_y) // args.batch
    total = args.epochs * per_epoch
    half = total // 2

    def evaluate(step):
        model.eval()
        loss_sum, wrong = 0.0, 0
        with torch.no_grad():
            for begin in range(0, len(valid_y), 500):
                logits = model(valid_x[begin:begin + 500])
                labels = valid_y[begin:begin + 500]
                loss_sum += F.cross_entropy(logits, labels, reduction="sum").item()
                wrong += (logits.argmax(1) != labels).sum().item()
        model.train()
        log({"step": step, "split": "valid", "loss": loss_sum / len(valid_y),
             "error_pct": 100.0 * wrong / len(valid_y), "epoch": step / per_epoch})

    evaluate(0)
    step, seconds, interval = 0, 0.0, []
    for _ in range(args.epochs):
        order = torch.randperm(len(train_y))
        for b in range(per_epoch):
            start = time.perf_counter()
            index = order[b * args.batch:(b + 1) * args.batch]
            step += 1
            lr = base_lr if step <= half else base_lr * (total - step) / (total - half)
            for group in adam.param_groups:
                group["lr"] = lr
                group["betas"] = (0.9 if step <= half else 0.5, 0.999)
            logits = model(train_x[index])
            loss = F.cross_entropy(logits, train_y[index])
            adam.zero_grad()
            loss.backward()
            adam.step()
            if not math.isfinite(loss.item()):
                raise SystemExit(f"error: loss is {loss.item()} at step {step}")
            elapsed = time.perf_counter() - start
            seconds += elapsed
            interval.append((loss.item(), (logits.argmax(1) != train_y[index]).float().mean().item(), elapsed))
            if step % args.log_every == 0 or step == total:
                log({"step": step, "split": "train", "loss": statistics.mean(r[0] for r in interval),
                     "time_sec": seconds, "sec_per_1k_steps": 1000.0 * sum(r[2] for r in interval) / len(interval),
                     "error_pct": 100.0 * statistics.mean(r[1] for r in interval), "lr": lr,
                     "epoch": step / per_epoch})
                interval = []
        evaluate(step)


def main():
    parser = torch_timing.model_parser(steps=10, warmup=2, default_norm="layernorm")
    recipe.add_flags(parser, "convpool")  # the lr is the norm's: 0.0003 for none
    parser.add_argument("--data", help="train on this CIFAR-10 JPEG tarball instead of timing")
    parser.add_argument("--out", default="runs/torch-cifar10")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--valid-size", type=int, default=5000)
    parser.add_argument("--train-size", type=int, default=0, help="use only this many training images (0: all)")
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    torch_timing.add_compile_flag(parser, "time")
    args = torch_timing.parse_args(parser)
    if args.data:
        if args.norm == "weightnorm":
            raise SystemExit("error: --data: weightnorm's data-dependent initialisation is not reproduced here")
        train(args)
    else:
        time_steps(args)


if __name__ == "__main__":
    main()
