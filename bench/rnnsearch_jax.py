"""RNNSearch (Bahdanau et al. 2015, as Nematus builds it; Zhang & Sennrich 2019's translation model) in
JAX, compiled whole by jax.jit for XLA's CPU backend: the JAX twin of models/rnnsearch.h and of
bench/rnnsearch_torch.py, to time one training step beside ours and PyTorch's, and to confirm that it
computes the same model as ours.

    python3 bench/rnnsearch_jax.py --norm rmsnorm --threads 1 [--steps 5] [--warmup 2]
        [--batch 80] [--src-len 22] [--tgt-len 22] [--vocab 8000] [--embed 256] [--hidden 256]
        [--dropout 0.2] [--p 0.0625] [--label-smoothing 0.1]
    python3 bench/rnnsearch_jax.py --check DIR     # DIR from bench_step --model rnnsearch --dump DIR

(python3: the one `pip install "jax[cpu]"` installed into.) Timing prints one JSON line with the
torch twin's fields: {"impl": "jax", "norm", "threads", "batch", "src_len", "tgt_len", "vocab",
"embed", "hidden", "parameters", "ms_per_step" (median of the timed steps), "ms_min", "peak_rss_mb"},
and "compile_s", the first call's seconds (tracing, XLA compilation and one step), which the warm-up
steps pay and the timed ones do not.

The model, batch and step are the torch twin's, written as functions of a dict of parameters named as
ours (encoder.forward.cell.weight_x_gates, ...), so --check loads our dump with no renaming:
    GRU cell    [a_r, a_u] = norm_x_gates(x W_xg^T + b_g) + norm_h_gates(h U_g^T)     (2H jointly)
                a_c = norm_x_cand(x W_xc^T + b_c) + r * norm_h_cand(h U_c^T)          (H)
                h' = u h + (1 - u) tanh(a_c), kept at h where the mask is 0
    encoder     C = [GRU_fwd(x); GRU_bwd(x)], x = dropout(E_src[f]),        time-major [S, B, 2H]
    init        s_0 = tanh(norm_init(W_init mean_i C_i + b_init)), the mean over real positions
    decoder     s'_j = GRU1(y'_j, s_{j-1}); c_j = attention(s'_j, C); s_j = GRU2(c_j, s'_j),
                y'_1 = 0, y'_j = dropout(E_tgt[e_{j-1}])
    attention   e = v^T tanh(norm_context(C W_c^T + b_c) + norm_state(s' W_s^T)) + b_v,
                alpha = softmax over the real source positions, c = sum_i alpha_i C_i
    output      logits = W_o dropout(tanh(norm_s(W_s s + b_s) + norm_y(W_y y' + b_y)
                                          + norm_c(W_c c + b_c))) + b_o
    loss        cross-entropy with label smoothing 0.1 over the real target tokens, summed, / B
Each recurrence is one jax.lax.scan: the input terms of all steps are computed first in one GEMM per
group (as ours and the torch twin do), and the scan body does only the recurrent part. XLA compiles
the scan's body once and runs it as a loop; its backward is a second loop in reverse.
Norms over the last axis, eps 1e-5: layernorm (gain, bias), rmsnorm x * rsqrt(mean(x^2) + eps) * gain,
prmsnorm the same with the mean over the first k = max(1, floor(n p)) units, l2norm
x * rsqrt(sum(x^2) + eps) * gain, none.
One step: forward, backward (jax.value_and_grad), clip by the global norm to 1 (torch's rule:
scale max_norm / (norm + 1e-6) when below 1), Adam lr 1e-4, betas (0.9, 0.999), eps 1e-8. Embedding
gradients are dense (the gather's transpose adds into a zero [V, E] matrix), as torch's default.

Where this twin differs from ours, none of which changes the work of a step:
  - initial values: the same distributions (weights N(0, 0.01^2), each H x H recurrent block
    orthogonal, biases 0, gains 1) from numpy's RandomState(0), not our generator;
  - the batch: the same lengths, ids from numpy's RandomState(0) (those of the torch twin);
  - dropout masks: from jax.random, a new key every step.

Threads. XLA:CPU's client (xla/pjrt/cpu/cpu_client.cc) makes two thread pools when it starts: the
"XLAEigen" intra-op pool that runs the GEMMs, convolutions and parallel loops, and a client pool that
runs the compiled program. Both get DefaultThreadPoolSize() threads (xla/pjrt/utils.cc): the
environment variable PJRT_NPROC (or NPROC) when set, else every core the process may run on. So:
  --threads 1   PJRT_NPROC=1, and XLA_FLAGS=--xla_cpu_multi_thread_eigen=false (Eigen's matrix
                products on the thread that runs the program, not split over the pool)
  --threads N   PJRT_NPROC=N
set in os.environ before jax is first imported. `intra_op_parallelism_threads=1`, often written into
XLA_FLAGS beside the Eigen flag, is TensorFlow's session option, not an XLA flag: XLA ignores the bare
word, and with the Eigen flag alone the pool keeps one thread per core and a step still ran on two
threads here; PJRT_NPROC is what decides. Measured on this 2-core VM from /proc/<pid>/task/*/stat
(CPU ticks per thread, and which threads are running, sampled every millisecond): at 1 thread one
"tf_XLAEigen" thread does most of the work (75-90%) and the Python and client threads that hand it
the work the rest, with two runnable at once in 10-15% of the samples (hand-offs; ~1.1 cores in all);
at 2 threads two "tf_XLAEigen" threads share the work evenly, two threads runnable in most samples.

--check DIR loads what `bench_step --model rnnsearch --dump DIR --norm N` wrote (config.json: sizes and
norm; params/<name>.npy: our initial parameters; source, target and their masks, time-major, ids as
float32; grads/<name>.npy: our gradients of one backward with dropout 0; result.json: our loss,
gradient norm and parameter count), computes the loss and every gradient in float64 (the exact
reference, so the whole difference is our float32 rounding) and, as a yardstick, the same program in
float32, and prints ours' and float32 JAX's differences from the reference. It exits 1 unless the
parameter names, shapes and count agree, the loss and the gradient norm agree to 1e-5 relative and
every gradient to 1e-4 of its parameter's largest element (of 1e-3 of the largest gradient anywhere,
when that is larger: the score bias b_v has an exactly-zero gradient, since a softmax ignores a shift,
and so do the embedding rows of words not in the batch), the transformer twin's bounds:
  - ours is float32 (unit roundoff 6e-8). The loss is a sum of log-sum-exps of logits of order 1
    after a few dozen ops per path, each adding a few ulps: ~1e-6 relative, so 1e-5 leaves 10x room.
  - a gradient sums B*T terms through at most T + S recurrent steps whose norms divide by RMS values of
    order 1 (their states start at 0, where the division by sqrt(eps) only scales); rounding then stays
    at ~1e-6-1e-5 of a parameter's largest gradient, and 1e-4 leaves room for cancelling sums. The
    float32 JAX run printed beside ours shows the size float32 alone gives.
  - pRMSNorm at small sizes takes its RMS over k = floor(n p) units, a single unit when n < 32 at
    p = 1/16, and 1/|x_0| amplifies rounding without bound; dump with --set hidden=64 --set embed=64
    (k >= 4 everywhere) to check it, as the usage below does.
The check's usage at small sizes (seconds each):
    build/bin/bench_step --model rnnsearch --norm N --dump /tmp/rnnsearch-N --set batch=6 \\
        --set src_len=7 --set tgt_len=6 --set vocab=50 --set embed=64 --set hidden=64
    python3 bench/rnnsearch_jax.py --check /tmp/rnnsearch-N
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

EOS = 3
NORMS = ["none", "layernorm", "rmsnorm", "prmsnorm", "l2norm"]
EPS = 1e-5


# ---- flags and threads: before jax is imported ----

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--norm", default="rmsnorm", choices=NORMS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (the first compiles)")
    recipe.add_flags(parser, "rnnsearch")  # sizes, --p, --dropout, --lr, --clip, ...
    parser.add_argument("--check", metavar="DIR", help="compare with bench_step --model rnnsearch --dump DIR")
    args = parser.parse_args()
    if args.clip_norm != "global":
        parser.error("--clip-norm: this twin clips the global norm only")
    if args.threads < 1 or args.steps < 1 or args.warmup < 1:
        parser.error("--threads, --steps and --warmup must be at least 1 (the first call compiles)")
    return args


ARGS = parse_args()
set_xla_threads(ARGS.threads)

import jax  # noqa: E402  (after the thread settings, which XLA reads once, when its client starts)
import jax.numpy as jnp  # noqa: E402


# ---- parameters, named as ours ----

def gru_shapes(prefix, n_in, hidden):
    h = hidden
    return {prefix + "weight_x_gates": (2 * h, n_in), prefix + "bias_gates": (2 * h,),
            prefix + "weight_x_cand": (h, n_in), prefix + "bias_cand": (h,),
            prefix + "weight_h_gates": (2 * h, h), prefix + "weight_h_cand": (h, h)}


def norm_shapes(name, kind, n):
    """A norm's parameters: layernorm a gain and a bias, the RMSNorm family a gain, none nothing."""
    if kind == "none":
        return {}
    shapes = {name + ".gain": (n,)}
    if kind == "layernorm":
        shapes[name + ".bias"] = (n,)
    return shapes


def parameter_shapes(norm, vocab, embed, hidden):
    """Our named_parameters() of RNNSearch: name -> shape. Attention size A = context size C = 2H."""
    both = 2 * hidden
    shapes = {"source_words.weight": (vocab, embed), "target_words.weight": (vocab, embed)}
    gru_norms = lambda prefix: {**norm_shapes(prefix + "norm_x_gates", norm, 2 * hidden),
                                **norm_shapes(prefix + "norm_x_cand", norm, hidden),
                                **norm_shapes(prefix + "norm_h_gates", norm, 2 * hidden),
                                **norm_shapes(prefix + "norm_h_cand", norm, hidden)}
    for direction in ("forward", "backward"):
        prefix = f"encoder.{direction}.cell."
        shapes.update(gru_shapes(prefix, embed, hidden))
        shapes.update(gru_norms(prefix))
    shapes.update({"init_state.weight": (hidden, both), "init_state.bias": (hidden,)})
    shapes.update(norm_shapes("norm_init", norm, hidden))
    shapes.update(gru_shapes("decoder.gru1.", embed, hidden))
    shapes.update(gru_norms("decoder.gru1."))
    shapes.update({"decoder.attention.context_to_hidden.weight": (both, both),
                   "decoder.attention.context_to_hidden.bias": (both,),
                   "decoder.attention.state_to_hidden.weight": (both, hidden),
                   "decoder.attention.hidden_to_score.weight": (1, both),
                   "decoder.attention.hidden_to_score.bias": (1,)})
    shapes.update(norm_shapes("decoder.attention.norm_context", norm, both))
    shapes.update(norm_shapes("decoder.attention.norm_state", norm, both))
    shapes.update(gru_shapes("decoder.gru2.", both, hidden))
    shapes.update(gru_norms("decoder.gru2."))
    for name, n_in in (("output_state", hidden), ("output_previous", embed), ("output_context", both)):
        shapes.update({name + ".weight": (embed, n_in), name + ".bias": (embed,)})
        shapes.update(norm_shapes("norm_" + name, norm, embed))
    shapes.update({"output_words.weight": (vocab, embed), "output_words.bias": (vocab,)})
    return shapes


def orthogonal(rng, n):
    """A random n x n orthogonal matrix: Q of a Gaussian's QR, its columns' signs fixed by R's
    diagonal so that Q is uniformly distributed (as torch's orthogonal_ does)."""
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def initial_parameters(shapes, hidden, seed=0):
    """Nematus' initialisation (our layers' and the torch twin's): weights N(0, 0.01^2), every H x H
    block of a recurrent weight orthogonal, biases 0, gains 1; float32."""
    rng = np.random.RandomState(seed)
    params = {}
    for name, shape in shapes.items():
        leaf = name.rsplit(".", 1)[1]
        if leaf == "gain":
            value = np.ones(shape)
        elif leaf == "bias" or leaf.startswith("bias_"):
            value = np.zeros(shape)
        elif leaf in ("weight_h_gates", "weight_h_cand"):
            value = np.concatenate([orthogonal(rng, hidden) for _ in range(shape[0] // hidden)])
        else:
            value = rng.normal(0.0, 0.01, shape)
        params[name] = jnp.asarray(value, dtype=jnp.float32)
    return params


# ---- the model: pure functions of (params, inputs); `norm` is the pair (kind, p) throughout ----

def partial_units(n, p):
    """pRMSNorm's k (layers/normalization.cpp): floor(n p), at least 1."""
    return max(1, math.floor(n * p))


def normalize(params, name, kind, p, x):
    """The norm `name` of kind `kind` over x's last axis."""
    if kind == "none":
        return x
    gain = params[name + ".gain"]
    if kind == "layernorm":
        mean = x.mean(-1, keepdims=True)
        centred = x - mean
        return centred * jax.lax.rsqrt((centred * centred).mean(-1, keepdims=True) + EPS) * gain \
            + params[name + ".bias"]
    if kind == "l2norm":
        return x * jax.lax.rsqrt((x * x).sum(-1, keepdims=True) + EPS) * gain
    k = partial_units(x.shape[-1], p) if kind == "prmsnorm" else x.shape[-1]
    head = x[..., :k]
    return x * jax.lax.rsqrt((head * head).mean(-1, keepdims=True) + EPS) * gain


def linear(params, name, x, bias=True):
    """x W^T (+ b) with our [out, in] weight layout."""
    y = x @ params[name + ".weight"].T
    return y + params[name + ".bias"] if bias else y


def gru_input_terms(params, prefix, norm, x):
    """x [..., I] -> the normalized input terms [..., 2H] and [..., H] of every position at once."""
    gates = x @ params[prefix + "weight_x_gates"].T + params[prefix + "bias_gates"]
    cand = x @ params[prefix + "weight_x_cand"].T + params[prefix + "bias_cand"]
    return normalize(params, prefix + "norm_x_gates", *norm, gates), \
        normalize(params, prefix + "norm_x_cand", *norm, cand)


def gru_step(params, prefix, norm, x_gates, x_cand, h, keep):
    """One GRU step from the input terms [B, 2H], [B, H] and the state h [B, H]; keep [B, 1] is True
    at a real token (a padded position keeps h)."""
    h_gates = normalize(params, prefix + "norm_h_gates", *norm, h @ params[prefix + "weight_h_gates"].T)
    h_cand = normalize(params, prefix + "norm_h_cand", *norm, h @ params[prefix + "weight_h_cand"].T)
    r, u = jnp.split(jax.nn.sigmoid(x_gates + h_gates), 2, axis=-1)
    c = jnp.tanh(x_cand + r * h_cand)
    return jnp.where(keep, u * h + (1 - u) * c, h)


def gru_sequence(params, prefix, norm, x, keep, reverse):
    """x [T, B, I], keep [T, B, 1] -> every state [T, B, H] in time order. The scan runs back to
    front when reverse and still returns the states in time order."""
    gates, cand = gru_input_terms(params, prefix, norm, x)
    h0 = jnp.zeros((x.shape[1], params[prefix + "weight_h_cand"].shape[0]), x.dtype)

    def step(h, inputs):
        x_gates, x_cand, keep_t = inputs
        h = gru_step(params, prefix, norm, x_gates, x_cand, h, keep_t)
        return h, h

    _, states = jax.lax.scan(step, h0, (gates, cand, keep), reverse=reverse)
    return states


def dropout(x, rate, key):
    """Inverted dropout (layers/dropout.h); key None or rate 0: identity."""
    if key is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def rnnsearch_loss(params, batch, config, key=None):
    """The training cost of one batch: ids [S, B] and [T, B] (int), masks [S, B] and [T, B] (float)."""
    source, source_mask, target, target_mask = batch
    norm = (config["norm"], config["p"])
    rate = config["dropout"]
    keys = jax.random.split(key, 3) if key is not None else (None, None, None)
    att = "decoder.attention."

    # Encoder: the bidirectional GRU over the source's word vectors.
    src_keep = (source_mask > 0)[:, :, None]
    x = dropout(params["source_words.weight"][source], rate, keys[0])                 # [S, B, E]
    context = jnp.concatenate([gru_sequence(params, "encoder.forward.cell.", norm, x, src_keep, False),
                               gru_sequence(params, "encoder.backward.cell.", norm, x, src_keep, True)], -1)
    weights = source_mask / source_mask.sum(0)                                         # [S, B]
    mean = (context * weights[:, :, None]).sum(0)                                      # [B, 2H]
    state = jnp.tanh(normalize(params, "norm_init", *norm, linear(params, "init_state", mean)))

    # Decoder inputs y': zeros, then the target words shifted by one position.
    words = params["target_words.weight"][target[:-1]]
    previous = dropout(jnp.concatenate([jnp.zeros_like(words[:1]), words]), rate, keys[1])  # [T, B, E]
    gates, cand = gru_input_terms(params, "decoder.gru1.", norm, previous)
    projected = normalize(params, att + "norm_context", *norm, linear(params, att + "context_to_hidden", context))
    blocked = source_mask == 0                                                         # [S, B]
    tgt_keep = (target_mask > 0)[:, :, None]

    def decoder_step(state, inputs):
        x_gates, x_cand, keep = inputs
        intermediate = gru_step(params, "decoder.gru1.", norm, x_gates, x_cand, state, keep)
        query = normalize(params, att + "norm_state", *norm,
                          linear(params, att + "state_to_hidden", intermediate, bias=False))   # [B, A]
        hidden = jnp.tanh(projected + query[None])                                          # [S, B, A]
        scores = linear(params, att + "hidden_to_score", hidden)[..., 0]                    # [S, B]
        # Masked softmax over the source positions, as ours: blocked scores to -1e30, then their
        # weights to exactly 0.
        alpha = jnp.where(blocked, 0.0, jax.nn.softmax(jnp.where(blocked, -1e30, scores), axis=0))
        attended = (alpha[:, :, None] * context).sum(0)                                     # [B, 2H]
        new_state = gru_step(params, "decoder.gru2.", norm,
                             *gru_input_terms(params, "decoder.gru2.", norm, attended), intermediate, keep)
        return new_state, (new_state, attended)

    _, (states, contexts) = jax.lax.scan(decoder_step, state, (gates, cand, tgt_keep))   # [T, B, H], [T, B, 2H]

    # Deep output and logits for all T*B positions at once.
    t_out = jnp.tanh(normalize(params, "norm_output_state", *norm, linear(params, "output_state", states))
                     + normalize(params, "norm_output_previous", *norm, linear(params, "output_previous", previous))
                     + normalize(params, "norm_output_context", *norm, linear(params, "output_context", contexts)))
    logits = linear(params, "output_words", dropout(t_out, rate, keys[2]))                # [T, B, V]

    # Label-smoothed cross-entropy: target distribution (1 - eps) onehot + eps / V, summed over the
    # real tokens, averaged over the sentences.
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(log_probs, target[:, :, None], axis=-1)[..., 0]
    smooth = -log_probs.mean(-1)
    eps = config["label_smoothing"]
    return (((1 - eps) * nll + eps * smooth) * target_mask).sum() / target.shape[1]


# ---- the training step ----

def clip_by_global_norm(grads, max_norm):
    """torch's clip_grad_norm_ (and ours, optim/clip.h): scale by max_norm / (norm + 1e-6) when < 1."""
    total = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / (total + 1e-6))
    return jax.tree_util.tree_map(lambda g: g * scale, grads)


def make_train_step(config, args):
    """The jitted step: (params, moments, step, key, batch) -> (params, moments, loss). params and
    moments are donated, so XLA updates them in place as torch's optimizer does."""
    def train_step(params, moments, step, key, batch):
        loss, grads = jax.value_and_grad(rnnsearch_loss)(params, batch, config, key)
        if args.clip > 0:
            grads = clip_by_global_norm(grads, args.clip)
        params, moments = adam_update(params, grads, moments, step, args.lr, args.beta1, args.beta2, args.eps)
        return params, moments, loss

    return jax.jit(train_step, donate_argnums=(0, 1))


# ---- the batch ----

def sentence_lengths(max_len, batch, stride):
    """bench/model_steps/model_step.cpp's: Lmin + (stride b) mod (L - Lmin + 1), Lmin = max(1, L - 9)."""
    low = max(1, max_len - 9)
    return [low + (stride * b) % (max_len - low + 1) for b in range(batch)]


def random_tokens(rng, lengths, vocab):
    """(ids, mask) [max(lengths), len(lengths)], time-major, as the torch twins draw them: ids uniform in
    [4, vocab) (0-3 are special), the last real one </s>, 0 past it, where the mask is 0 too."""
    ids = rng.randint(4, vocab, size=(max(lengths), len(lengths)))
    mask = np.zeros(ids.shape, dtype=np.float32)
    for b, length in enumerate(lengths):
        mask[:length, b] = 1
        ids[length - 1, b] = EOS
    ids[mask == 0] = 0
    return ids.astype(np.int32), mask


def make_batch(batch, src_len, tgt_len, vocab):
    rng = np.random.RandomState(0)
    return (*random_tokens(rng, sentence_lengths(src_len, batch, 7), vocab),
            *random_tokens(rng, sentence_lengths(tgt_len, batch, 3), vocab))


# ---- timing ----

def time_steps(args):
    config = {"norm": args.norm, "p": args.p, "dropout": args.dropout, "label_smoothing": args.label_smoothing}
    shapes = parameter_shapes(args.norm, args.vocab, args.embed, args.hidden)
    params = initial_parameters(shapes, args.hidden)
    moments = (jax.tree_util.tree_map(jnp.zeros_like, params), jax.tree_util.tree_map(jnp.zeros_like, params))
    batch = tuple(jnp.asarray(a) for a in make_batch(args.batch, args.src_len, args.tgt_len, args.vocab))
    train_step = make_train_step(config, args)
    times, compile_s = time_train_steps(train_step, params, moments, (batch,), args.warmup, args.steps)
    print(json.dumps({"impl": "jax", "norm": args.norm, "threads": args.threads, "batch": args.batch,
                      "src_len": batch[0].shape[0], "tgt_len": batch[2].shape[0], "vocab": args.vocab,
                      "embed": args.embed, "hidden": args.hidden,
                      "parameters": sum(int(np.prod(s)) for s in shapes.values()),
                      "ms_per_step": round(statistics.median(times), 3), "ms_min": round(min(times), 3),
                      "peak_rss_mb": peak_rss_mb(), "compile_s": round(compile_s, 2)}), flush=True)


# ---- the check against our dump ----


def check(directory):
    cfg, ours, shapes, params, ours_grads = read_dump(
        directory, lambda c: parameter_shapes(c["norm"], c["vocab"], c["embed"], c["hidden"]))
    config = {"norm": cfg["norm"], "p": cfg["p"], "dropout": 0.0, "label_smoothing": cfg["label_smoothing"]}
    load = lambda name: np.load(os.path.join(directory, name))
    batch = (load("source.npy").astype(np.int32), load("source_mask.npy").astype(np.float64),
             load("target.npy").astype(np.int32), load("target_mask.npy").astype(np.float64))

    def run(dtype):
        """Loss and gradients (float64 numpy) of the dumped parameters and batch, computed in dtype."""
        p = {k: jnp.asarray(v, dtype) for k, v in params.items()}
        b = (batch[0], jnp.asarray(batch[1], dtype), batch[2], jnp.asarray(batch[3], dtype))
        loss, grads = jax.jit(jax.value_and_grad(lambda p, b: rnnsearch_loss(p, b, config)))(p, b)
        return float(loss), {k: np.asarray(v, np.float64) for k, v in grads.items()}

    report_check(cfg, ours, ours_grads, shapes, run)


def main():
    if ARGS.check:
        check(ARGS.check)
    else:
        time_steps(ARGS)


if __name__ == "__main__":
    main()
