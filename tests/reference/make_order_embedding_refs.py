"""Reference values for the order-embedding penalty and loss (Vendrov et al. 2016).

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/make_order_embedding_refs.py
Writes tests/reference/order_embedding.json:

  {"torch": version,
   "violation": [{"name", "s" [Bs,D], "im" [Bi,D], "r" [Bs,Bi], "out" [Bs,Bi], "grad_s", "grad_im"}, ...],
   "loss": [{"name", "method": "order"|"cosine", "margin", "eps", "s_raw" [B,D], "im_raw" [B,D],
             "loss", "grad_s_raw", "grad_im_raw"}, ...]}

Tensors are {"shape": [...], "data": [...]} row-major. Inputs are drawn in float32 by a seeded
torch generator and widened to float64, so a float32 reader sees them exactly; every result is
computed in float64 and written at full precision.

violation: out[i,j] = sum_d max(0, s[i,d] - im[j,d])^2 (the order-violation penalty E(s, im)
for every pair); grad_* are the gradients of sum(out * r).

loss: l2norm(x) = x / sqrt(sum_d x^2 + eps), eps 1e-8;
  order:  s = |l2norm(s_raw)|, im = |l2norm(im_raw)|, errors[i,j] = E(s[i], im[j]);
  cosine: s = l2norm(s_raw),   im = l2norm(im_raw),   errors[i,j] = -s[i] . im[j];
  d = diag(errors); cost_s[i,j] = max(0, margin - errors[i,j] + d[j]);
  cost_im[i,j] = max(0, margin - errors[i,j] + d[i]);
  loss = sum over i != j of cost_s[i,j] + cost_im[i,j] (a sum, not a mean).
Cases are re-drawn (next seed) until no off-diagonal hinge argument and no element of
l2norm(s_raw), l2norm(im_raw) lies within 1e-3 of 0, so finite differences are meaningful.
"""
import json
import os
import zlib

import torch

EPS = 1e-8
GAP = 1e-3  # stricter than needed (1e-4): room for a float32 finite-difference step


def t(x):
    return {"shape": list(x.shape), "data": [float(v) for v in x.detach().reshape(-1).tolist()]}


def draw(gen, *shape):
    """float32 N(0,1); callers transform in float32 and widen with .double() last."""
    return torch.randn(*shape, generator=gen, dtype=torch.float32)


def violation(s, im):
    return (s[:, None, :] - im[None, :, :]).clamp(min=0).pow(2).sum(2)


def l2norm(x):
    return x / torch.sqrt(x.pow(2).sum(1, keepdim=True) + EPS)


def hinge_arguments(method, margin, s_raw, im_raw):
    """(s, im normalised before abs, both hinge arguments [B,B] each)."""
    ns, nim = l2norm(s_raw), l2norm(im_raw)
    if method == "order":
        errors = violation(ns.abs(), nim.abs())
    else:
        errors = -(ns @ nim.T)
    d = errors.diagonal()
    return ns, nim, margin - errors + d[None, :], margin - errors + d[:, None]


def violation_case(name, bs, bi, dim, scale=None, some_zero=False):
    """Re-drawn until some pair penalty is > 0 (and, with some_zero, some pair's is exactly 0)."""
    for attempt in range(1000):
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()) + attempt)
        s, im = draw(gen, bs, dim), draw(gen, bi, dim)
        if scale is not None:
            s, im = s.abs() * scale, im.abs() * scale
        out = violation(s.double(), im.double())
        if out.max() > 0 and (not some_zero or out.min() == 0):
            break
    s, im = s.double().requires_grad_(), im.double().requires_grad_()
    r = draw(gen, bs, bi).double()
    out = violation(s, im)
    print(f"{name}: seed attempt {attempt}, {int((out > 0).sum())} of {out.numel()} pair penalties > 0")
    (out * r).sum().backward()
    return {"name": name, "s": t(s), "im": t(im), "r": t(r), "out": t(out),
            "grad_s": t(s.grad), "grad_im": t(im.grad)}


def loss_case(name, method, margin, batch, dim, tie):
    """im_raw = tie * s_raw + noise, so matching pairs sit closer than random ones."""
    off = ~torch.eye(batch, dtype=torch.bool)
    for attempt in range(1000):
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()) + attempt)
        s32 = draw(gen, batch, dim)
        s_raw, im_raw = s32.double(), (tie * s32 + draw(gen, batch, dim)).double()
        ns, nim, arg_s, arg_im = hinge_arguments(method, margin, s_raw, im_raw)
        args = torch.cat([arg_s[off], arg_im[off]])
        active = int((args > 0).sum())
        if (args.abs().min() > GAP and ns.abs().min() > GAP and nim.abs().min() > GAP
                and 0 < active < args.numel()):
            break
    else:
        raise RuntimeError(f"{name}: no clean draw")
    s_raw.requires_grad_()
    im_raw.requires_grad_()
    _, _, arg_s, arg_im = hinge_arguments(method, margin, s_raw, im_raw)
    loss = (arg_s.clamp(min=0)[off] + arg_im.clamp(min=0)[off]).sum()
    loss.backward()
    print(f"{name}: seed attempt {attempt}, {active} of {args.numel()} hinges active, "
          f"min |hinge arg| {args.abs().min():.3g}, loss {loss.item():.6g}")
    return {"name": name, "method": method, "margin": margin, "eps": EPS, "s_raw": t(s_raw),
            "im_raw": t(im_raw), "loss": loss.item(), "grad_s_raw": t(s_raw.grad),
            "grad_im_raw": t(im_raw.grad)}


def main():
    violations = [
        violation_case("normal_3x4x5", 3, 4, 5),
        violation_case("nonneg_7x7x11", 7, 7, 11, scale=0.3),
        violation_case("single_1x6x2", 1, 6, 2, some_zero=True),
    ]
    losses = [
        loss_case("order_b4_d6", "order", 0.05, 4, 6, tie=0.5),
        loss_case("order_b9_d13", "order", 0.05, 9, 13, tie=0.5),
        loss_case("cosine_b5_d7", "cosine", 0.2, 5, 7, tie=0.5),
    ]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "order_embedding.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "violation": violations, "loss": losses}, f)
    print(f"wrote {len(violations)} violation and {len(losses)} loss cases to {path}")


if __name__ == "__main__":
    main()
