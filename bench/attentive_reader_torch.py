"""The bidirectional attentive reader (Hermann et al. 2015) in PyTorch, as in the RMSNorm paper's
experiment (Table 6), to time one training step beside our C++ bench (bench_attentive_reader).

    /usr/bin/python3 bench/attentive_reader_torch.py --norm rmsnorm --threads 1 [--steps 5] [--warmup 2]
        [--doc-len 300] [--batch 64] [--vocab 10000] [--embed 240] [--hidden 240] [--candidates 10]
        [--dropout 0.5] [--p 0.0625] [--compile]

Prints one JSON line: {"impl": "torch", "norm", "threads", "batch", "doc_len", "query_len",
"candidates", "vocab", "embed", "hidden", "parameters", "ms_per_step" (median of the timed steps),
"ms_min"}. With --compile the loss (forward and, through AOTAutograd, backward; the Python time loops
unrolled into one graph) runs under torch.compile with its CPU backend (Inductor), "impl" is then
"torch.compile", and the compilation happens in the warm-up steps (at least one), outside the timing.

Data, fixed for every step (the same lengths as ours): document b has length
Ld_b = Lmin + (7 b) % (Td - Lmin + 1), Lmin = ceil(5 Td / 6) (250-300 for Td = 300); query b has
length Lq_b = 12 + (5 b) % 9 (12-20); token ids uniform in [4, vocab) from numpy RandomState(0),
zero-padded past the length, mask[t, b] = 1 for t < L_b; K = 10 candidate ids per question in
[4, vocab), no padding slots; answer b % K.

Model (models/attentive_reader.h, layers/lstm.h, layers/attention.h), time-major:
    LSTM cell, gate order i, f, g, o, one bias inside the input term:
        xt = norm_x(x W_x^T + b)  [T, B, 4H]   (whole sequence at once)
        a  = xt[t] + norm_h(h W_h^T);  i, f, o = sigmoid, g = tanh
        c  = m (f c + i g) + (1 - m) c;  h = m (o tanh(norm_c(c))) + (1 - m) h,  h0 = c0 = 0
    y_d = [forward LSTM ; backward LSTM] over the document           [Td, B, 2H]
    u   = [forward LSTM's last h ; backward LSTM's last h] over the query (their own weights)
    P = y_d W_c^T + b_c,  q = u W_s^T,  e = v^T tanh(P + q) + b_v,  s = masked softmax over t
    r = sum_t s(t) y_d(t),  g = dropout(tanh(W_g [r ; u] + b_g))
    score[b, k] = W_out[candidate b, k] . g_b,  loss = mean cross-entropy over the K candidates
Dropout p on the word vectors of document and query and on g. Norms only inside the LSTMs, over the
last axis (the 4H terms jointly): layernorm F.layer_norm (eps 1e-5, gain and bias); rmsnorm
x * rsqrt(mean(x^2) + 1e-5) * gain; prmsnorm the same with the mean of squares over the first
max(1, floor(n p)) units (as layers/normalization.cpp's partial_units; 60 of 960 and 15 of 240 at
p = 0.0625, where floor and ceil agree); batchnorm F.batch_norm in training mode (gain, bias,
running statistics, momentum 0.1), norm_x over all Td*B positions, norm_h / norm_c over the B rows
of each step; none. Init (torch.manual_seed(0)): word vectors and W_out N(0, 0.1^2), W_x Xavier
uniform per gate block, W_h orthogonal per H x H gate block, Linear weights Xavier uniform, biases
0, gains 1.
The time loop runs in Python over xt.unbind(0) (indexing xt[t] instead makes the backward sum T
zero-filled copies of xt, quadratic in T: minutes per step at T = 300).
One step: zero grads, forward, backward, clip_grad_norm_ 10 (global), Adam lr 8e-5. Embedding
gradients are dense (torch's default, sparse=False).
"""
import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import recipe
import torch_timing
from torch_norms import Norm
from torch_tokens import random_tokens


def gate_blocks(w, orthogonal):
    h = w.shape[0] // 4
    for gate in range(4):
        if orthogonal:
            nn.init.orthogonal_(w[gate * h:(gate + 1) * h])
        else:
            nn.init.xavier_uniform_(w[gate * h:(gate + 1) * h])


class NormLSTM(nn.Module):
    def __init__(self, norm, emb, hidden, p, reverse=False):
        super().__init__()
        self.hidden, self.reverse = hidden, reverse
        self.weight_x = nn.Parameter(torch.empty(4 * hidden, emb))
        self.bias = nn.Parameter(torch.zeros(4 * hidden))
        self.weight_h = nn.Parameter(torch.empty(4 * hidden, hidden))
        self.norm_x, self.norm_h = Norm(norm, 4 * hidden, p), Norm(norm, 4 * hidden, p)
        self.norm_c = Norm(norm, hidden, p)
        with torch.no_grad():
            gate_blocks(self.weight_x, False)
            gate_blocks(self.weight_h, True)

    def forward(self, x, mask):
        """x [T, B, E], mask [T, B] -> states [T, B, H] (time order), last h [B, H]."""
        steps, batch = x.shape[0], x.shape[1]
        xt = self.norm_x(F.linear(x.reshape(steps * batch, -1), self.weight_x, self.bias))
        # unbind, not xt[t]: the backward of T selects would add T zero-filled [T, B, 4H] tensors.
        xt = xt.reshape(steps, batch, 4 * self.hidden).unbind(0)
        h = x.new_zeros(batch, self.hidden)
        c = x.new_zeros(batch, self.hidden)
        states = [None] * steps
        for t in (reversed(range(steps)) if self.reverse else range(steps)):
            a = xt[t] + self.norm_h(F.linear(h, self.weight_h))
            i, f, g, o = a.chunk(4, 1)
            m = mask[t][:, None]
            c = m * (torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)) + (1 - m) * c
            h = m * (torch.sigmoid(o) * torch.tanh(self.norm_c(c))) + (1 - m) * h
            states[t] = h
        return torch.stack(states), h


class MLPAttention(nn.Module):
    def __init__(self, context, state, hidden):
        super().__init__()
        self.context_to_hidden = nn.Linear(context, hidden)
        self.state_to_hidden = nn.Linear(state, hidden, bias=False)
        self.hidden_to_score = nn.Linear(hidden, 1)

    def forward(self, state, context, mask):
        projected = self.context_to_hidden(context)                               # [Td, B, A]
        hidden = torch.tanh(projected + self.state_to_hidden(state)[None])
        scores = self.hidden_to_score(hidden).squeeze(2)                          # [Td, B]
        blocked = mask == 0
        alpha = scores.masked_fill(blocked, -1e30).softmax(0).masked_fill(blocked, 0.0)
        return (alpha[:, :, None] * context).sum(0), alpha


class AttentiveReader(nn.Module):
    def __init__(self, norm, vocab, emb, hidden, dropout, p):
        super().__init__()
        both = 2 * hidden
        self.dropout = dropout
        self.words = nn.Embedding(vocab, emb)
        self.doc_forward = NormLSTM(norm, emb, hidden, p)
        self.doc_backward = NormLSTM(norm, emb, hidden, p, reverse=True)
        self.query_forward = NormLSTM(norm, emb, hidden, p)
        self.query_backward = NormLSTM(norm, emb, hidden, p, reverse=True)
        self.attention = MLPAttention(both, both, both)
        self.joint = nn.Linear(2 * both, both)
        self.output_words = nn.Parameter(torch.empty(vocab, both))
        with torch.no_grad():
            nn.init.normal_(self.words.weight, 0.0, 0.1)
            nn.init.normal_(self.output_words, 0.0, 0.1)
            for linear in (self.attention.context_to_hidden, self.attention.state_to_hidden,
                           self.attention.hidden_to_score, self.joint):
                nn.init.xavier_uniform_(linear.weight)
                if linear.bias is not None:
                    nn.init.zeros_(linear.bias)

    def forward(self, document, doc_mask, query, query_mask, candidates, candidate_padding):
        d = F.dropout(self.words(document), self.dropout, self.training)
        y_d = torch.cat([self.doc_forward(d, doc_mask)[0], self.doc_backward(d, doc_mask)[0]], 2)
        q = F.dropout(self.words(query), self.dropout, self.training)
        u = torch.cat([self.query_forward(q, query_mask)[1], self.query_backward(q, query_mask)[1]], 1)
        r, _ = self.attention(u, y_d, doc_mask)
        g = F.dropout(torch.tanh(self.joint(torch.cat([r, u], 1))), self.dropout, self.training)
        scores = (F.embedding(candidates, self.output_words) * g[:, None, :]).sum(2)
        return scores.masked_fill(candidate_padding, -1e9)


def make_batch(batch, doc_len, query_len, vocab, candidates):
    rng = np.random.RandomState(0)
    min_doc = -(-5 * doc_len // 6)
    min_query = max(1, query_len - 8)
    doc_lengths = [min_doc + (7 * b) % (doc_len - min_doc + 1) for b in range(batch)]
    query_lengths = [min_query + (5 * b) % (query_len - min_query + 1) for b in range(batch)]
    document, doc_mask = random_tokens(rng, doc_lengths, vocab)
    query, query_mask = random_tokens(rng, query_lengths, vocab)
    cands = torch.from_numpy(rng.randint(4, vocab, size=(batch, candidates))).long()
    padding = torch.zeros(batch, candidates, dtype=torch.bool)
    answers = torch.arange(batch) % candidates
    return document, doc_mask, query, query_mask, cands, padding, answers


def main():
    parser = torch_timing.model_parser(steps=5, warmup=2, p=0.0625,
                                       norms=["none", "layernorm", "rmsnorm", "prmsnorm", "batchnorm"])
    recipe.add_flags(parser, "reader")
    torch_timing.add_compile_flag(parser)
    args = torch_timing.parse_args(parser)
    model = AttentiveReader(args.norm, args.vocab, args.embed, args.hidden, args.dropout, args.p)
    model.train()
    inputs = make_batch(args.batch, args.doc_len, args.query_len, args.vocab, args.candidates)
    *question, answers = inputs
    params = list(model.parameters())

    def loss(question, answers):
        return F.cross_entropy(model(*question), answers)

    step = torch_timing.compiled_step(args, params, loss, question, answers)
    timing = torch_timing.training_step_fields(step, args.steps, args.warmup)
    torch_timing.print_json({"impl": torch_timing.impl(args), "norm": args.norm,
                             "threads": args.threads, "batch": args.batch,
                             "doc_len": inputs[0].shape[0], "query_len": inputs[2].shape[0],
                             "candidates": args.candidates, "vocab": args.vocab, "embed": args.embed,
                             "hidden": args.hidden, "parameters": sum(p.numel() for p in params), **timing})


if __name__ == "__main__":
    main()
