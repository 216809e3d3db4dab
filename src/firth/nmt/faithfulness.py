"""Is attention an explanation? A faithfulness test for the attention of a trained
translation model (Jain and Wallace 2019; Wiegreffe and Pinter 2019).

At every decoding step the attention distribution over the source is replaced,
everything else held fixed (the same weights, the same inputs; a pointer-
generator copies by the edited distribution too; the transformer's edit is on
every cross-attention head of every layer):

- ``permute``: a random permutation of itself over the real source positions
  (one per sentence, step, head and layer, from the stage's seed);
- ``uniform``: uniform over the real source positions;
- ``drop-max``: the most-attended position removed and the rest renormalised (a
  one-token source keeps its weight);
- ``identity``: unchanged (the oracle tests' control).

Measured per intervention: under teacher forcing on the references, the share of
target positions whose most probable token changes and the mean total variation
distance 0.5 sum |p - q| between the output distributions; and the greedy
translations' BLEU and chrF (sacreBLEU) with the edit applied at every step.
Apart from the interventions: Kendall's tau between each step's attention weights
and the gradient x input importance |sum_e (d log p(y_t) / d x_j)_e x_je| of the
source embeddings x_j, over the real source positions, averaged over the steps
of each verse (on the first ``tau_sentences`` test verses)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import kendalltau

from firth.accel import resolve_device
from firth.errors import ConfigError
from firth.io import sha256_file
from firth.nmt.data import (
    PAD,
    decode,
    load_tokenizer,
    make_batch,
    read_pairs,
    token_batches,
)
from firth.nmt.decode import decode_corpus
from firth.nmt.evaluate import Scores
from firth.nmt.models.base import Seq2Seq
from firth.nmt.results import AttentionEval, AttentionItems, Intervention
from firth.nmt.stage import encode_split, load_trained, select

log = logging.getLogger(__name__)

KINDS = ("permute", "uniform", "drop-max")


class Edit:
    """One intervention on attention weights (..., S) with the source mask (B, S)
    (the weights' first dimension is the batch)."""

    def __init__(self, kind: str, seed: int = 0):
        if kind not in (*KINDS, "identity"):
            raise ValueError(f"unknown intervention {kind!r}; choose from {KINDS}")
        self.kind = kind
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.kind == "identity":
            return weights
        shape, S = weights.shape, weights.shape[-1]
        # the mask broadcast to every leading dimension: (B, ..., S) -> (N, S)
        m = mask.view(mask.shape[0], *([1] * (weights.dim() - 2)), S)
        m = m.expand(shape).reshape(-1, S)
        w = weights.reshape(-1, S)
        if self.kind == "uniform":
            out = m.to(w.dtype) / m.sum(1, keepdim=True).clamp_min(1)
        elif self.kind == "drop-max":
            top = w.argmax(1, keepdim=True)
            dropped = w.scatter(1, top, 0.0)
            total = dropped.sum(1, keepdim=True)
            keep = (m.sum(1, keepdim=True) <= 1) | (total <= 0)
            out = torch.where(keep, w, dropped / total.clamp_min(1e-30))
        else:  # permute the real positions among themselves
            keys = torch.rand(w.shape, generator=self.generator).to(w.device)
            keys = keys.masked_fill(~m, 2.0)  # padding sorts last
            src_pos = keys.argsort(1)  # a random order of the real positions first
            dst_pos = (~m).to(torch.int8).argsort(dim=1, stable=True)  # real, in order
            out = torch.zeros_like(w).scatter(1, dst_pos, w.gather(1, src_pos))
        return out.view(shape)


@contextmanager
def edited(model, edit: Edit | None) -> Iterator[None]:
    """``model``'s attention edited by ``edit`` inside the block."""
    holder = model if hasattr(model, "edit") else getattr(model, "attention", None)
    if holder is None or not hasattr(holder, "edit"):
        raise ValueError(f"{type(model).__name__} has no attention to intervene on")
    holder.edit = edit
    try:
        yield
    finally:
        holder.edit = None


def step_logprobs(model, batch) -> torch.Tensor:
    """Teacher-forced log-probabilities (B, T, V') through the step interface
    (the path decoding and the interventions take; the transformer's one-pass
    forward does not expose its steps)."""
    logits, _ = Seq2Seq.forward(model, batch.src, batch.src_mask, batch.tgt_in)
    return F.log_softmax(logits.float(), dim=-1)


@torch.no_grad()
def output_change(
    model, src, tgt, edit: Edit, *, batch_tokens: int, device
) -> np.ndarray:
    """Per test verse (in input order): target tokens whose argmax changed under
    ``edit``, target tokens, and the summed total variation distance: (N, 3)."""
    was = model.training
    model.eval()
    out = np.zeros((len(src), 3))
    for idx in token_batches(src, tgt, batch_tokens):
        b = make_batch(idx, src, tgt).to(device)
        real = b.tgt_out != PAD
        base = step_logprobs(model, b)
        with edited(model, edit):
            new = step_logprobs(model, b)
        changed = (base.argmax(-1) != new.argmax(-1)) & real
        tv = 0.5 * (base.exp() - new.exp()).abs().sum(-1) * real
        rows = np.stack(
            [
                changed.sum(1).cpu().numpy(),
                real.sum(1).cpu().numpy(),
                tv.sum(1).double().cpu().numpy(),
            ],
            1,
        )
        out[b.index.cpu().numpy()] = rows
    model.train(was)
    return out


def greedy_ids(model, src, edit: Edit | None, *, batch: int, a, b, device):
    """Greedy output ids of every verse with ``edit`` applied at every step."""
    if edit is None:
        return decode_corpus(model, src, batch=batch, a=a, b=b, device=device)
    with edited(model, edit):
        return decode_corpus(model, src, batch=batch, a=a, b=b, device=device)


def importance_tau(model, src, tgt, *, batch_tokens: int, device) -> np.ndarray:
    """Per verse, the mean over its target steps of Kendall's tau between the
    step's attention weights and the gradient x input importance of the source
    embeddings (nan for a one-token source)."""
    was = model.training
    model.eval()
    taus = np.full(len(src), np.nan)
    captured: list[torch.Tensor] = []

    def keep_first(_module, _inputs, output):
        if not captured:  # the first embedding call of a forward is the source's
            captured.append(output)

    hook = model.embedding.register_forward_hook(keep_first)
    try:
        for idx in token_batches(src, tgt, batch_tokens):
            b = make_batch(idx, src, tgt).to(device)
            captured.clear()
            logits, attn = Seq2Seq.forward(model, b.src, b.src_mask, b.tgt_in)
            x = captured[0]  # (B, S, E) source embeddings
            logp = F.log_softmax(logits.float(), -1)
            gold = logp.gather(2, b.tgt_out[..., None])[..., 0]  # (B, T)
            real_t = b.tgt_out != PAD
            lens = b.src_mask.sum(1)
            per = [[] for _ in idx]
            for t in range(gold.shape[1]):
                live = real_t[:, t]
                if not bool(live.any()):
                    continue
                (g,) = torch.autograd.grad(gold[:, t][live].sum(), x, retain_graph=True)
                imp = (g * x).sum(-1).abs().detach()  # (B, S)
                w = attn[:, t].detach()
                for j in live.nonzero()[:, 0].tolist():
                    n = int(lens[j])
                    if n < 2:
                        continue
                    tau = kendalltau(w[j, :n].cpu().numpy(), imp[j, :n].cpu().numpy())
                    if not np.isnan(tau.statistic):
                        per[j].append(tau.statistic)
            for j, i in enumerate(idx):
                if per[j]:
                    taus[i] = float(np.mean(per[j]))
    finally:
        hook.remove()
        model.train(was)
    return taus


def evaluate_faithfulness(
    cfg, ev, name: str, *, test_path, model, tokenizer
) -> tuple[AttentionEval, AttentionItems]:
    """The faithfulness test of run ``name`` (its folder ``model``, the tokenizer
    folder ``tokenizer``) on the test pairs ``test_path`` with the
    ``evaluate_attention`` settings ``ev``."""
    run = select(cfg, name)
    c = cfg.common
    tok = load_tokenizer(tokenizer / "tokenizer.json")
    device = resolve_device(c.device, key="nmt.common.device")
    net = load_trained(model, cfg, name, run, tok, device)
    if not net.has_attention:
        raise ConfigError(
            f"evaluate_attention.runs: {name} ({run.model}) has no attention"
        )
    test = read_pairs(test_path)
    enc = encode_split(tok, test, run.pointer)
    refs = list(test.target)
    scores, change = {}, {}
    for kind in ("original", *ev.interventions):
        edit = None if kind == "original" else Edit(kind, ev.seed)
        ids = greedy_ids(
            net, enc.src, edit, batch=c.eval_batch, a=c.max_len_a, b=c.max_len_b,
            device=device,
        )  # fmt: skip
        hyps = [decode(tok, x, o) for x, o in zip(ids, enc.oov, strict=True)]
        scores[kind] = Scores(hyps, refs)
        if edit is not None:
            change[kind] = output_change(
                net, enc.src, enc.tgt, Edit(kind, ev.seed),
                batch_tokens=c.batch_tokens, device=device,
            )  # fmt: skip
        log.info("%s %s: greedy BLEU %.2f", name, kind, scores[kind].score("bleu"))
    n_tau = min(ev.tau_sentences, len(enc.src))
    taus = importance_tau(
        net, enc.src[:n_tau], enc.tgt[:n_tau], batch_tokens=c.batch_tokens,
        device=device,
    )  # fmt: skip
    mean_tau = float(np.nanmean(taus)) if n_tau and not np.isnan(taus).all() else None
    test_hash = sha256_file(test_path)
    record = AttentionEval(
        run=name,
        model=run.model,
        seed=run.seed,
        pointer=run.pointer,
        test_pairs=len(test),
        test_sha256=test_hash,
        original={m: round(scores["original"].score(m), 4) for m in ("bleu", "chrf")},
        interventions={
            k: Intervention(
                changed_share=round(
                    float(change[k][:, 0].sum() / change[k][:, 1].sum()), 6
                ),
                mean_tv=round(float(change[k][:, 2].sum() / change[k][:, 1].sum()), 6),
                bleu=round(scores[k].score("bleu"), 4),
                chrf=round(scores[k].score("chrf"), 4),
            )
            for k in ev.interventions
        },
        tau_sentences=n_tau,
        mean_tau=None if mean_tau is None else round(mean_tau, 6),
    )
    items = AttentionItems(
        run=name,
        test_sha256=test_hash,
        bleu={
            k: [[int(x) for x in r] for r in s.stats["bleu"]] for k, s in scores.items()
        },
        chrf={
            k: [[int(x) for x in r] for r in s.stats["chrf"]] for k, s in scores.items()
        },
        change={
            k: [[round(float(x), 6) for x in r] for r in v] for k, v in change.items()
        },
        tau=[None if np.isnan(t) else round(float(t), 6) for t in taus],
    )
    return record, items
