"""The pointer-generator (See et al. 2017): a soft switch p_gen mixes generating
from the vocabulary with copying a source position by its attention weight, over
the vocabulary plus the batch's own out-of-vocabulary source ids. A mixin of the
recurrent attention models (firth.nmt.models.recurrent), which build ``switch``."""

from __future__ import annotations

import torch

from firth.nmt.models.base import TINY


def mixture(p_vocab, p_gen, attention, src_ids, width: int) -> torch.Tensor:
    """The pointer-generator distribution over ``width`` >= V ids:
    p_gen * P_vocab (on the first V ids) + (1 - p_gen) * the attention mass of each
    source position added onto that position's id. p_vocab (B, V), p_gen (B, 1),
    attention and src_ids (B, S); or every step at once: p_vocab (B, T, V), p_gen
    (B, T, 1), attention (B, T, S) and src_ids (B, S)."""
    out = p_vocab.new_zeros(*p_vocab.shape[:-1], width)
    out[..., : p_vocab.shape[-1]] = p_gen * p_vocab
    if src_ids.dim() < attention.dim():
        src_ids = src_ids[:, None].expand_as(attention)
    return out.scatter_add(-1, src_ids, (1 - p_gen) * attention)


class PointerGenerator:
    """The pointer-generator's output distribution and its inspection; the model
    provides ``switch`` (p_gen from [c_i; s_i; E y_{i-1}]), ``vocab`` and the
    vocabulary logits (the next class in the MRO)."""

    recorded: list | None = None  # pointer parts per step, when recording

    def _mix(self, feat, ctx, s, e, attn, src):
        """log P of the pointer-generator over V + the batch's extended ids, for
        one step or every step at once (``mixture``'s shapes)."""
        p_vocab = torch.softmax(super().logits(feat), dim=-1)
        p_gen = torch.sigmoid(self.switch(torch.cat([ctx, s, e], -1)))
        width = max(self.vocab, int(src.max()) + 1)
        p = mixture(p_vocab, p_gen, attn, src, width)
        if self.recorded is not None:
            self.recorded.append((p_gen[..., 0], p_gen * p_vocab, p))
        return p.clamp_min(TINY).log()

    @torch.no_grad()
    def copy_parts(self, src, mask, tgt_in, tgt_out):
        """Teacher-forced over given outputs: p_gen (B, T) and the share of each
        output token's probability that came from copying, (B, T)."""
        self.recorded = []
        try:
            self(src, mask, tgt_in)
            steps = [  # one record per step, or one of every step (B, T, .)
                r if r[0].dim() == 2 else tuple(x.unsqueeze(1) for x in r)
                for r in self.recorded
            ]
            p_gen, gen, p = (torch.cat(x, 1) for x in zip(*steps, strict=True))
            y = tgt_out[..., None]
            total = p.gather(-1, y)[..., 0]
            generated = gen.gather(-1, y.clamp_max(gen.shape[-1] - 1))[..., 0]
            generated = torch.where(tgt_out < gen.shape[-1], generated, 0.0)
            return p_gen, 1 - generated / total.clamp_min(TINY)
        finally:
            self.recorded = None
