"""What the JAX twins (rnnsearch_jax.py, convpool_jax.py) share: XLA's thread count, Adam, the
timing of a jitted training step, and the check against our dump.

XLA reads its thread settings once, when its CPU client starts, so a twin calls set_xla_threads
before it first imports jax; this module imports jax only inside the functions that need it.
Why PJRT_NPROC and the Eigen flag: rnnsearch_jax.py's docstring.
"""
import math
import os
import resource
import time


def set_xla_threads(threads):
    """XLA:CPU's thread count, from the environment; call before importing jax. Flags already in
    XLA_FLAGS are kept."""
    os.environ["PJRT_NPROC"] = str(threads)
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()


def adam_update(params, grads, moments, step, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam step (Kingma & Ba 2015) with bias correction; step counts from 1. Traced into the
    jitted step: moments is (first, second), trees shaped like params."""
    import jax
    import jax.numpy as jnp
    first, second = moments
    first = jax.tree_util.tree_map(lambda m, g: beta1 * m + (1 - beta1) * g, first, grads)
    second = jax.tree_util.tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, second, grads)
    correction1, correction2 = 1 - beta1 ** step, 1 - beta2 ** step
    params = jax.tree_util.tree_map(
        lambda p, m, v: p - lr * (m / correction1) / (jnp.sqrt(v / correction2) + eps), params, first, second)
    return params, (first, second)


def time_train_steps(train_step, params, moments, inputs, warmup, steps):
    """Runs warmup + steps calls of train_step(params, moments, step, key, *inputs) -> (params,
    moments, loss), each with a fresh dropout key, waiting for each to finish. Returns the timed
    steps' milliseconds and the first call's seconds (tracing, XLA's compilation and one step), and
    exits with an error when the last loss is not finite."""
    import jax
    key = jax.random.PRNGKey(0)
    times, compile_s, loss = [], 0.0, None
    for i in range(warmup + steps):
        key, step_key = jax.random.split(key)
        start = time.perf_counter()
        params, moments, loss = train_step(params, moments, i + 1, step_key, *inputs)
        loss.block_until_ready()
        elapsed = time.perf_counter() - start
        if i == 0:
            compile_s = elapsed
        if i >= warmup:
            times.append(elapsed * 1e3)
    if not math.isfinite(float(loss)):
        raise SystemExit(f"error: loss is {float(loss)}")
    return times, compile_s


def peak_rss_mb():
    """The process's peak resident size in MB (ru_maxrss is in KB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def read_dump(directory, shapes_of):
    """What a --check reads of bench_step --dump DIR, with jax switched to float64 first: the settings
    (config.json), our results (result.json), the twin's parameter shapes for them (shapes_of(settings):
    name -> shape), our parameters checked against those, and our gradients."""
    import jax
    from twin_check import our_gradients, our_parameters, read_json
    jax.config.update("jax_enable_x64", True)
    cfg, ours = read_json(directory, "config.json"), read_json(directory, "result.json")
    shapes = shapes_of(cfg)
    return cfg, ours, shapes, our_parameters(directory, shapes, "jax"), our_gradients(directory)


def report_check(cfg, ours, ours_grads, shapes, run, **extra):
    """A --check's verdict: run(dtype) -> (loss, float64 gradients) of the dumped parameters and batch,
    computed in float64 (the reference) and float32 (the yardstick), compared with ours
    (twin_check.verdict) and printed with `extra` (twin_check.print_check)."""
    import jax.numpy as jnp
    import numpy as np
    from twin_check import print_check, verdict
    reference = run(jnp.float64)
    mine, yardstick, passed = verdict(ours, ours_grads, reference, run(jnp.float32))
    count = sum(int(np.prod(s)) for s in shapes.values())
    print_check({"norm": cfg["norm"]}, ours, count, reference[0], mine, yardstick,
                passed and count == ours["parameters"], "jax", **extra)
