"""Our norms over the last axis (layers/normalization.h) in PyTorch, for the recurrent model twins
(attentive_reader_torch.py, order_embedding_torch.py, rnnsearch_torch.py); each twin offers the kinds
its paper experiment has; make_norm, for the Transformer twins (transformer_torch.py, lm_torch.py),
uses torch's own LayerNorm and RMSNorm where torch has them. ConvPool's norms act on conv maps and
live in convpool_torch.py.

    none       x
    layernorm  F.layer_norm, gain and bias
    rmsnorm    x * rsqrt(mean(x^2) + eps) * gain
    prmsnorm   the same with the mean of squares over the first k = max(1, floor(n p)) units
               (layers/normalization.cpp's partial_units)
    l2norm     x * rsqrt(sum(x^2) + eps) * gain
    batchnorm  F.batch_norm in training mode over the rows (gain, bias, running statistics, momentum 0.1)

eps is 1e-5 throughout. Gains start at 1 and biases at 0, so building a Norm draws no random numbers:
a twin's other parameters come out the same whichever norm it uses.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-5


class Norm(nn.Module):
    def __init__(self, kind, n, p):
        super().__init__()
        self.kind, self.n = kind, n
        self.k = max(1, math.floor(n * p)) if kind == "prmsnorm" else n
        if kind != "none":
            self.gain = nn.Parameter(torch.ones(n))
        if kind in ("layernorm", "batchnorm"):
            self.bias = nn.Parameter(torch.zeros(n))
        if kind == "batchnorm":
            self.register_buffer("running_mean", torch.zeros(n))
            self.register_buffer("running_var", torch.ones(n))

    def forward(self, x):
        if self.kind == "none":
            return x
        if self.kind == "layernorm":
            return F.layer_norm(x, (self.n,), self.gain, self.bias, EPS)
        if self.kind == "batchnorm":
            return F.batch_norm(x, self.running_mean, self.running_var, self.gain, self.bias, training=True,
                                momentum=0.1, eps=EPS)
        if self.kind == "l2norm":
            return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + EPS) * self.gain
        return x * torch.rsqrt(x[..., :self.k].pow(2).mean(-1, keepdim=True) + EPS) * self.gain


def make_norm(kind, d, p):
    """The Transformer twins' norm over the last axis: torch's own modules where torch has the norm
    (nn.LayerNorm with gain and bias, nn.RMSNorm with eps inside the root), Norm for the rest
    (prmsnorm, l2norm), nn.Identity for none."""
    if kind == "none":
        return nn.Identity()
    if kind == "layernorm":
        return nn.LayerNorm(d, eps=EPS)
    if kind == "rmsnorm":
        return nn.RMSNorm(d, eps=EPS)
    return Norm(kind, d, p)  # a gain named "gain"
