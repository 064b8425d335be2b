"""The token batches of the recurrent model twins, shaped as bench/model_steps/model_step.cpp's
random_tokens shapes ours: time-major ids with a mask. The ids themselves differ from ours (another
generator), which costs the timing nothing: only the lengths decide the work.
"""
import numpy as np

import torch


def random_tokens(rng, lengths, vocab, eos=None):
    """(ids, mask), both [max(lengths), len(lengths)]: sequence b has lengths[b] tokens, uniform in
    [4, vocab) (0-3 are the special tokens), the last of them eos when given; 0 (<pad>) after it, where
    the float mask is 0 too. The ids come from rng as one [steps, batch] array, padding slots included."""
    batch, steps = len(lengths), max(lengths)
    ids = rng.randint(4, vocab, size=(steps, batch))
    mask = np.zeros((steps, batch), dtype=np.float32)
    for b, length in enumerate(lengths):
        mask[:length, b] = 1
        if eos is not None:
            ids[length - 1, b] = eos
    ids[mask == 0] = 0
    return torch.from_numpy(ids).long(), torch.from_numpy(mask)


EOS = 3  # SentencePiece's </s>: the last token of every sentence of the translation batches


def sentence_lengths(max_len, batch, stride):
    """The translation benchmarks' sentence lengths, as ours (model_step.h): sentence b of a batch with
    longest length L has Lmin + (stride·b) mod (L − Lmin + 1) tokens, Lmin = max(1, L − 9)."""
    low = max(1, max_len - 9)
    return [low + (stride * b) % (max_len - low + 1) for b in range(batch)]


def translation_batch(batch, src_len, tgt_len, vocab):
    """(source ids, source mask, target ids, target mask) of the translation twins, as ours: sources of
    stride 7 and targets of stride 3 (sentence_lengths), each ending in EOS, drawn from RandomState(0)."""
    rng = np.random.RandomState(0)
    return (*random_tokens(rng, sentence_lengths(src_len, batch, 7), vocab, EOS),
            *random_tokens(rng, sentence_lengths(tgt_len, batch, 3), vocab, EOS))
