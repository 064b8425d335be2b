"""ConvPool-CNN-C (Springenberg et al. 2015, the CIFAR-10 network of Salimans & Kingma's weight-norm code
that Zhang & Sennrich 2019 train with every norm) in JAX, compiled whole by jax.jit for XLA's CPU
backend: the JAX twin of models/convpool_cnn.h and of bench/convpool_torch.py's timing mode, to time
one training step beside ours and PyTorch's, and to confirm that it computes the same model as ours.

    python3 bench/convpool_jax.py --norm rmsnorm --width 0.5 --batch 100 --threads 2 [--steps 10] [--warmup 2]
    python3 bench/convpool_jax.py --check DIR   # DIR from bench_step --model convpool --dump DIR

(python3: the one `pip install "jax[cpu]"` installed into.) Timing prints one JSON line with the torch
twin's fields: {"impl": "jax", "norm", "width", "batch", "threads", "step_ms" (median of the timed
steps), "steps", "peak_rss_mb"}, and "parameters" and "compile_s", the first call's seconds (tracing,
XLA compilation and one step), which the warm-up steps pay and the timed ones do not.

The model, NCHW as ours, with c1 = round(96 width), c2 = round(192 width):
    input [N, 3, 32, 32] + N(0, 0.15^2) noise (training only)
    3 x [conv 3x3 c1, pad 1 -> norm -> leaky ReLU 0.1]            32 x 32
    max-pool 2x2 -> dropout 0.5                                    16 x 16
    3 x [conv 3x3 c2, pad 1 -> norm -> leaky ReLU]                 16 x 16
    max-pool 2x2 -> dropout 0.5                                     8 x 8
    conv 3x3 c2, no padding -> norm -> leaky ReLU                   6 x 6
    2 x [conv 1x1 c2 -> norm -> leaky ReLU]                         6 x 6
    global average pool -> dense 10 -> norm -> logits; cross-entropy, mean over the batch
Norms, eps 1e-6 inside the square root, with a gain and a bias per channel (per unit after the dense
layer): on conv maps layernorm, rmsnorm, prmsnorm and l2norm normalize each sample's channel map over
H x W; prmsnorm takes the mean of squares over the first k = max(1, floor(H W p)) positions, p = 1/8,
and the 10 logits fall back to all their units (k would be 1); batchnorm normalizes each channel over
N x H x W with the batch's statistics (training mode, biased variance); weightnorm reparameterises every
conv and the dense weight as W = g v / |v| (one g per output unit) and adds no norm. A layer followed
by a norm with a bias (all but none and weightnorm) has no bias of its own.
One step: forward, backward (jax.value_and_grad), Adam lr 3e-3 (3e-4 for none), betas (0.9, 0.999),
eps 1e-8, no clip.

Where this twin differs from ours, none of which changes the work of a step noticeably:
  - initial values: the same distributions (Glorot uniform weights, zero biases, gains 1; weightnorm's
    v from N(0, 0.05^2) with g = |v|) from numpy's RandomState(0), not our generator; weightnorm's
    data-dependent initialisation of g and b is not reproduced (as in the torch twin);
  - the batch: N(0, 1) images and uniform labels from numpy's RandomState(0);
  - noise and dropout masks: from jax.random, a new key every step;
  - batchnorm's running statistics are not kept: they do not enter a training step's loss, and their
    update is a few per-channel vectors.

Threads: as in bench/rnnsearch_jax.py (see its docstring): PJRT_NPROC=N sizes XLA:CPU's thread pools,
and --threads 1 also sets XLA_FLAGS=--xla_cpu_multi_thread_eigen=false; both before jax is imported.

--check DIR loads what `bench_step --model convpool --dump DIR --norm N` wrote
(config.json: width, batch, norm, p, eps; params/<name>.npy, our parameters with every gain and bias
moved off 1 and 0 by N(0, 0.1^2); images.npy and labels.npy; grads/<name>.npy, our gradients of one
backward without noise and dropout, batchnorm in training mode; result.json: our loss, gradient norm
and parameter count), computes the loss and every gradient in float64 (the exact reference) and, as a
yardstick, in float32, and prints ours' and float32 JAX's differences from the reference. It exits 1
unless the parameter names, shapes and count agree, the loss and the gradient norm agree to 1e-5
relative and every gradient to 1e-4 of its parameter's largest element (of 1e-3 of the largest
gradient anywhere, when that is larger):
  - ours is float32 (unit roundoff 6e-8); the loss is a mean of log-sum-exps after nine conv layers of
    sums over at most 9 c2 terms each and their norms: ~1e-6 relative at most, so 1e-5 leaves room.
  - a gradient sums N x H x W terms of products of a few dozen factors of order 1 (the norms divide by
    an RMS of order 1): ~1e-6-1e-5 of the parameter's largest gradient, and 1e-4 leaves room for
    cancelling sums. The float32 JAX run printed beside ours shows what float32 alone gives.
  - leaky ReLU and max-pool have kinks: a pre-activation within ~1e-6 of 0, or two pooled values within
    ~1e-6 of each other, could decide differently in float32 and float64 and move a gradient by more.
    The check prints the smallest |pre-activation| and the smallest gap between a window's largest
    and second-largest value ("closest_kinks") so that such a failure explains itself.
The check's usage at small sizes (seconds each):
    build/bin/bench_step --model convpool --norm N --dump /tmp/convpool-N \\
        --set width=0.125 --set batch=4
    python3 bench/convpool_jax.py --check /tmp/convpool-N
"""
import argparse
import json
import math
import os
import statistics
import sys

import numpy as np

from jax_twin import adam_update, peak_rss_mb, read_dump, report_check, set_xla_threads, time_train_steps
import recipe

NORMS = ["none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "batchnorm", "weightnorm"]
CLASSES = 10


# ---- flags and threads: before jax is imported ----

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--norm", default="layernorm", choices=NORMS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (the first compiles)")
    recipe.add_flags(parser, "convpool")  # --width, --batch, --lr (the norm's), ...
    parser.add_argument("--check", metavar="DIR", help="compare with bench_step --model convpool --dump DIR")
    args = parser.parse_args()
    if args.threads < 1 or args.steps < 1 or args.warmup < 1:
        parser.error("--threads, --steps and --warmup must be at least 1 (the first call compiles)")
    return args


ARGS = parse_args()
set_xla_threads(ARGS.threads)

import jax  # noqa: E402  (after the thread settings, which XLA reads once, when its client starts)
import jax.numpy as jnp  # noqa: E402


# ---- the architecture and its parameters, named as ours ----

def conv_specs(width):
    """(in, out, kernel, padding) of the nine convolutions."""
    c1, c2 = max(1, round(96 * width)), max(1, round(192 * width))
    return [(3, c1, 3, 1), (c1, c1, 3, 1), (c1, c1, 3, 1), (c1, c2, 3, 1), (c2, c2, 3, 1), (c2, c2, 3, 1),
            (c2, c2, 3, 0), (c2, c2, 1, 0), (c2, c2, 1, 0)]


def layer_has_bias(norm):
    """Only layers whose norm has no bias of its own keep theirs."""
    return norm in ("none", "weightnorm")


def parameter_shapes(norm, width):
    """Our named_parameters() of ConvPoolCnnC: name -> shape."""
    shapes = {}
    layers = [(f"conv{i + 1}", (o, i_, k, k), f"norm{i + 1}") for i, (i_, o, k, _) in enumerate(conv_specs(width))]
    layers.append(("dense", (CLASSES, conv_specs(width)[-1][1]), "dense_norm"))
    for layer, weight_shape, norm_name in layers:
        if norm == "weightnorm":
            shapes[layer + ".weight_v"] = weight_shape
            shapes[layer + ".weight_g"] = (weight_shape[0],)
        else:
            shapes[layer + ".weight"] = weight_shape
        if layer_has_bias(norm):
            shapes[layer + ".bias"] = (weight_shape[0],)
        else:
            shapes[norm_name + ".gain"] = (weight_shape[0],)
            shapes[norm_name + ".bias"] = (weight_shape[0],)
    return shapes


def initial_parameters(shapes, seed=0):
    """Our init: weights Glorot uniform (fans in x kh x kw and out x kh x kw), biases 0, gains 1;
    under weightnorm v ~ N(0, 0.05^2) and g = |v| per output unit, so that W = v at the start."""
    rng = np.random.RandomState(seed)
    params = {}
    for name, shape in shapes.items():
        leaf = name.rsplit(".", 1)[1]
        if leaf == "gain":
            value = np.ones(shape)
        elif leaf == "bias":
            value = np.zeros(shape)
        elif leaf == "weight_v":
            value = rng.normal(0.0, 0.05, shape)
        elif leaf == "weight_g":
            continue  # from its v, below
        else:
            receptive = int(np.prod(shape[2:]))
            bound = math.sqrt(6.0 / ((shape[0] + shape[1]) * receptive))
            value = rng.uniform(-bound, bound, shape)
        params[name] = value
    for name in shapes:
        if name.endswith(".weight_g"):
            v = params[name[:-1] + "v"]
            params[name] = np.sqrt((v.reshape(v.shape[0], -1) ** 2).sum(1))
    return {name: jnp.asarray(params[name], dtype=jnp.float32) for name in shapes}


# ---- the model: pure functions of (params, inputs) ----

def partial_units(n, p):
    """pRMSNorm's k (layers/normalization.cpp): floor(n p), at least 1."""
    return max(1, math.floor(n * p))


def normalize(params, name, kind, p, eps, x):
    """The norm `name` after a conv (x [N, C, H, W]) or the dense layer (x [N, F])."""
    if kind in ("none", "weightnorm"):
        return x
    channels = x.ndim == 4
    shape = (1, -1, 1, 1) if channels else (1, -1)
    gain, bias = params[name + ".gain"].reshape(shape), params[name + ".bias"].reshape(shape)
    if kind == "batchnorm":
        axes = (0, 2, 3) if channels else (0,)
        mean = x.mean(axes, keepdims=True)
        centred = x - mean
        return centred * jax.lax.rsqrt((centred * centred).mean(axes, keepdims=True) + eps) * gain + bias
    rows = x.reshape(x.shape[0], x.shape[1], -1) if channels else x     # [N, C, H W] or [N, F]
    if kind == "layernorm":
        centred = rows - rows.mean(-1, keepdims=True)
        y = centred * jax.lax.rsqrt((centred * centred).mean(-1, keepdims=True) + eps)
    elif kind == "l2norm":
        y = rows * jax.lax.rsqrt((rows * rows).sum(-1, keepdims=True) + eps)
    else:  # rmsnorm, prmsnorm
        n = rows.shape[-1]
        k = partial_units(n, p) if kind == "prmsnorm" else n
        if not channels and k < 4:
            k = n  # the 10 logits: a partial RMS of one unit would be |x_0|
        head = rows[..., :k]
        y = rows * jax.lax.rsqrt((head * head).mean(-1, keepdims=True) + eps)
    return y.reshape(x.shape) * gain + bias


def weight(params, layer, norm):
    """The layer's weight, through weight norm's W = g v / |v| (per output unit) when it has one."""
    if norm != "weightnorm":
        return params[layer + ".weight"]
    v, g = params[layer + ".weight_v"], params[layer + ".weight_g"]
    rows = v.reshape(v.shape[0], -1)
    scale = g * jax.lax.rsqrt((rows * rows).sum(1))
    return v * scale.reshape((-1,) + (1,) * (v.ndim - 1))


def conv(params, layer, norm, x, padding):
    y = jax.lax.conv_general_dilated(x, weight(params, layer, norm), window_strides=(1, 1),
                                     padding=[(padding, padding)] * 2, dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + params[layer + ".bias"].reshape(1, -1, 1, 1) if layer_has_bias(norm) else y


def max_pool(x):
    """2 x 2 windows, stride 2."""
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def dropout(x, rate, key):
    """Inverted dropout (layers/dropout.h); key None: identity."""
    if key is None:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def logits(params, images, config, key=None):
    """images [N, 3, 32, 32] -> logits [N, 10]; key None: no noise and no dropout."""
    norm, p, eps = config["norm"], config["p"], config["eps"]
    keys = jax.random.split(key, 3) if key is not None else (None, None, None)
    x = images if key is None else images + config["input_noise"] * jax.random.normal(keys[0], images.shape,
                                                                                       images.dtype)
    for i, (_, _, _, padding) in enumerate(conv_specs(config["width"])):
        x = conv(params, f"conv{i + 1}", norm, x, padding)
        x = jax.nn.leaky_relu(normalize(params, f"norm{i + 1}", norm, p, eps, x), 0.1)
        if i in (2, 5):
            x = dropout(max_pool(x), config["dropout"], keys[1 if i == 2 else 2])
    x = x.mean((2, 3))                                                          # [N, c2]
    y = x @ weight(params, "dense", norm).T
    if layer_has_bias(norm):
        y = y + params["dense.bias"]
    return normalize(params, "dense_norm", norm, p, eps, y)


def loss_fn(params, images, labels, config, key=None):
    """Cross-entropy, the mean over the batch."""
    log_probs = jax.nn.log_softmax(logits(params, images, config, key), axis=-1)
    return -jnp.take_along_axis(log_probs, labels[:, None], axis=-1).mean()


# ---- the training step ----


def make_train_step(config, args):
    """The jitted step: (params, moments, step, key, images, labels) -> (params, moments, loss). params
    and moments are donated, so XLA updates them in place as torch's optimizer does."""
    def train_step(params, moments, step, key, images, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, images, labels, config, key)
        params, moments = adam_update(params, grads, moments, step, args.lr, args.beta1, args.beta2, args.eps)
        return params, moments, loss

    return jax.jit(train_step, donate_argnums=(0, 1))


# ---- timing ----

def time_steps(args):
    config = {"norm": args.norm, "width": args.width, "p": 0.125, "eps": 1e-6, "dropout": args.dropout,
              "input_noise": args.input_noise}
    shapes = parameter_shapes(args.norm, args.width)
    params = initial_parameters(shapes)
    moments = tuple(jax.tree_util.tree_map(jnp.zeros_like, params) for _ in range(2))
    rng = np.random.RandomState(0)
    images = jnp.asarray(rng.standard_normal((args.batch, 3, 32, 32)), dtype=jnp.float32)
    labels = jnp.asarray(rng.randint(0, CLASSES, args.batch), dtype=jnp.int32)
    train_step = make_train_step(config, args)
    times, compile_s = time_train_steps(train_step, params, moments, (images, labels), args.warmup, args.steps)
    print(json.dumps({"impl": "jax", "norm": args.norm, "width": args.width, "batch": args.batch,
                      "threads": args.threads, "step_ms": round(statistics.median(times), 2), "steps": args.steps,
                      "peak_rss_mb": peak_rss_mb(), "parameters": sum(int(np.prod(s)) for s in shapes.values()),
                      "compile_s": round(compile_s, 2)}), flush=True)


# ---- the check against our dump ----


def closest_kinks(params, images, config):
    """(smallest |input| of any leaky ReLU, smallest gap between the largest and second-largest value of
    any max-pool window), from the reference's forward pass: where float32 and float64 could decide
    a kink differently."""
    norm, p, eps = config["norm"], config["p"], config["eps"]
    relu, pool = math.inf, math.inf
    x = images
    for i, (_, _, _, padding) in enumerate(conv_specs(config["width"])):
        x = normalize(params, f"norm{i + 1}", norm, p, eps, conv(params, f"conv{i + 1}", norm, x, padding))
        relu = min(relu, float(jnp.abs(x).min()))
        x = jax.nn.leaky_relu(x, 0.1)
        if i in (2, 5):
            n, c, h, w = x.shape
            windows = jnp.sort(x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
                               .reshape(n, c, h // 2, w // 2, 4), axis=-1)
            pool = min(pool, float((windows[..., -1] - windows[..., -2]).min()))
            x = max_pool(x)
    return float(f"{relu:.3g}"), float(f"{pool:.3g}")


def check(directory):
    cfg, ours, shapes, params, ours_grads = read_dump(directory, lambda c: parameter_shapes(c["norm"], c["width"]))
    config = {"norm": cfg["norm"], "width": cfg["width"], "p": cfg["p"], "eps": cfg["eps"], "dropout": 0.0,
              "input_noise": 0.0}
    load = lambda name: np.load(os.path.join(directory, name))
    images, labels = load("images.npy").astype(np.float64), load("labels.npy").astype(np.int32)

    def run(dtype):
        """Loss and gradients (float64 numpy) of the dumped parameters and batch, computed in dtype."""
        p = {k: jnp.asarray(v, dtype) for k, v in params.items()}
        loss, grads = jax.jit(jax.value_and_grad(lambda p, x: loss_fn(p, x, labels, config)))(
            p, jnp.asarray(images, dtype))
        return float(loss), {k: np.asarray(v, np.float64) for k, v in grads.items()}

    relu_kink, pool_gap = closest_kinks({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(images), config)
    report_check(cfg, ours, ours_grads, shapes, run, closest_kinks={"leaky_relu": relu_kink, "max_pool": pool_gap})


def main():
    if ARGS.check:
        check(ARGS.check)
    else:
        time_steps(ARGS)


if __name__ == "__main__":
    main()
