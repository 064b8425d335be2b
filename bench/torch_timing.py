"""The harness every PyTorch twin in bench/ times itself with, so that all of them measure alike and as
our C++ benches do (bench/step_timing.h, "alone"): the same flags, untimed warm-up calls first, then the
median of the timed ones, printed as one JSON object per line.

Two kinds of twin use it:
  per-op twins (bench_*_torch.py)   op_parser(): --threads, --repeats; forward_and_backward_ms()
  model twins (*_torch.py)          model_parser(): --norm, --threads, --steps [, --warmup, --p];
                                    recipe.add_flags() (bench/recipe.py: the model's recipe as ours
                                    trains it); compiled_step() (recipe_step(), under torch.compile with
                                    --compile); training_step_fields()
A twin imports it as `import torch_timing`: Python puts the running script's folder (bench/) first on
sys.path, so this works from any working directory.
"""
import argparse
import json
import math
import resource
import statistics
import sys
import time

import torch

import recipe


def op_parser(repeats):
    """The flags of a per-op twin; the twin adds its own (sizes) before parse_args()."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=repeats)
    return parser


def model_parser(steps, warmup=None, norms=None, default_norm="rmsnorm", p=None):
    """The flags of a model twin: the norm (one of norms, when given), the thread count, the timed
    steps and, when given a default, the untimed steps first (--warmup; a twin without it warms up a
    fixed number of steps) and pRMSNorm's fraction of units (--p)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--norm", default=default_norm, choices=norms)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=steps, help="timed steps")
    if warmup is not None:
        parser.add_argument("--warmup", type=int, default=warmup, help="untimed steps first")
    if p is not None:
        parser.add_argument("--p", type=float, default=p, help="pRMSNorm's fraction of units")
    parser.add_argument("--precision", choices=["f32", "bf16"], default="f32",
                        help="bf16: the forward pass under torch.autocast('cpu', dtype=torch.bfloat16), as ours "
                             "runs its products and convolutions in bf16 with --precision bf16")
    return parser


def parse_args(parser):
    """Parses the command line and applies the shared flags: torch's own thread pool gets --threads
    (the wrappers set OMP_NUM_THREADS to match, for the libraries below torch), and the seed is 0 so that
    every run of a twin times the same numbers."""
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return args


def timed_calls(body, repeats, warmup):
    """(milliseconds of each of `repeats` calls of body(), what the last one returned), after `warmup`
    untimed calls: the first calls pay for allocation, caches and torch's lazy set-up, which a step in a
    long run does not."""
    for _ in range(warmup):
        body()
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = body()
        times.append((time.perf_counter() - start) * 1e3)
    return times, result


def median_ms(repeats, body, warmup=3):
    """The median milliseconds of body(): the median, not the mean, because this machine is shared and a
    few calls land on a busy moment."""
    return statistics.median(timed_calls(body, repeats, warmup)[0])


def forward_and_backward_ms(repeats, forward, dy, leaves, warmup=3):
    """(forward ms, forward+backward ms) of forward(), as our per-op benches time their ops: the forward
    alone records no graph (torch.no_grad, as our forward-only runs keep no tape); forward+backward pulls
    dy back to the leaves, whose gradients are reset before each call (parameters that are not in leaves
    accumulate theirs, as ours do)."""
    with torch.no_grad():
        forward_ms = median_ms(repeats, forward, warmup)

    def forward_backward():
        for leaf in leaves:
            leaf.grad = None
        forward().backward(dy)

    return forward_ms, median_ms(repeats, forward_backward, warmup)


def peak_rss_mb():
    """The process's peak resident size in MB (ru_maxrss is in KB on Linux), as bench_memory reports ours."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def recipe_step(args, params, loss):
    """The step function of a model twin, as the recipe's flags (recipe.add_flags) say: zero the
    gradients, loss() (the forward pass), backward, clip the gradient norm to --clip (of all params
    together, or of each one alone with --clip-norm per_parameter; --clip 0: no clip), Adam's step with
    --lr, --beta1, --beta2 and --eps. With --precision bf16 the forward pass runs under CPU autocast
    (products and convolutions in bf16, the rest as autocast decides), backward outside it, as PyTorch's
    documentation prescribes. It returns the loss as a float, as training_step_fields wants."""
    optimizer = torch.optim.Adam(params, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)
    clip_groups = [[p] for p in params] if args.clip_norm == "per_parameter" else [params]

    bf16 = getattr(args, "precision", "f32") == "bf16"

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            value = loss()
        value.backward()
        if args.clip > 0:
            for group in clip_groups:
                torch.nn.utils.clip_grad_norm_(group, args.clip)
        optimizer.step()
        return value.item()

    step.precision = "bf16" if bf16 else "f32"
    return step


def checked_model_args(model, norms, check):
    """The flags of a model twin that checks itself against our dump, parsed: model_parser (5 timed
    steps after 2 warm-up ones), the recipe's (recipe.add_flags), --check DIR and --compile. With
    --check DIR it runs check(DIR) and ends."""
    parser = model_parser(steps=5, warmup=2, norms=norms)
    recipe.add_flags(parser, model)
    parser.add_argument("--check", metavar="DIR", help=f"compare with bench_step --model {model} --dump DIR")
    add_compile_flag(parser)
    args = parse_args(parser)
    if args.check:
        check(args.check)
        sys.exit(0)
    return args


def add_compile_flag(parser, what="run"):
    """--compile: the loss under torch.compile (compiled_step)."""
    parser.add_argument("--compile", action="store_true", help=f"{what} the loss under torch.compile (Inductor)")


def compiled_step(args, params, loss, *inputs):
    """recipe_step of loss(*inputs), with --compile of the loss under torch.compile: its first call
    compiles, so --warmup is at least 1 then."""
    if args.compile:
        loss = torch.compile(loss)
        args.warmup = max(args.warmup, 1)
    return recipe_step(args, params, lambda: loss(*inputs))


def impl(args):
    """The "impl" field of a twin's line: torch, or torch.compile with --compile."""
    return "torch.compile" if args.compile else "torch"


def training_step_fields(step, steps, warmup):
    """The JSON fields every model twin ends its line with: "ms_per_step" (median of `steps` timed calls
    of step() after `warmup` untimed ones), "ms_min" and "peak_rss_mb". step() runs one training step and
    returns its loss as a float; a loss that is not finite at the end stops the twin with an error, since
    the time of a broken step means nothing. "precision" comes first: the step's, from recipe_step."""
    times, loss = timed_calls(step, steps, warmup)
    if not math.isfinite(loss):
        raise SystemExit(f"error: loss is {loss}")
    return {"precision": getattr(step, "precision", "f32"), "ms_per_step": round(statistics.median(times), 3), "ms_min": round(min(times), 3),
            "peak_rss_mb": peak_rss_mb()}


def print_json(record):
    """One JSON object on one line, flushed at once, so that a wrapper shows it as soon as it is measured."""
    print(json.dumps(record), flush=True)
