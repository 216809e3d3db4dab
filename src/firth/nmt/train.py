"""Training of the translation models (firth.training.fit): teacher forcing,
cross-entropy with optional label smoothing, AdamW with a linear warm-up then cosine
decay, gradient-norm clipping, and ``evals_per_epoch`` validations per epoch.

Batches hold about ``batch_tokens`` padded target tokens of similar length; each
epoch draws its own grouping and order from (seed, epoch). Each validation
scores the valid loss (plain NLL per target token, no smoothing) and, on a fixed
subset of valid sentences, greedy BLEU (the curve against training minutes), and
saves a checkpoint of the whole training state, so a killed run resumes where it
stopped and ends with the same weights. The weights with the best valid loss are
kept; ``patience`` validations without a new best stop the run (0 = never).

On several processes (torch DDP under torchrun, firth.distributed) every rank
draws the same global batches and trains on its share of each batch's sentences
(every ``processes``-th one); each rank's summed loss is divided by the global
batch's target tokens and multiplied by the number of processes, so DDP's averaged
gradient equals the single-process gradient of the whole batch. Rank 0 validates
and checkpoints (every rank's random generators included).
"""

from __future__ import annotations

import logging
import math

import sacrebleu
import torch
import torch.nn.functional as F

from firth import distributed
from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.distributed import SINGLE, Group
from firth.nmt.config import NmtCommon
from firth.nmt.data import PAD, decode, make_batch, token_batches
from firth.nmt.decode import decode_corpus
from firth.training import Result, Task, fit, loss_stats, scheduled_plan

log = logging.getLogger(__name__)


def coverage_loss_sum(attention: torch.Tensor, tgt_mask: torch.Tensor):
    """See et al.'s coverage loss summed over the real target steps:
    sum_t sum_i min(a_ti, cov_ti) with cov_t = sum_{t' < t} a_t' (attention
    (B, T, S), tgt_mask (B, T)). Zero when no source position is attended twice."""
    coverage = attention.cumsum(1) - attention
    return (torch.minimum(attention, coverage).sum(-1) * tgt_mask).sum()


def loss_sum(
    model, batch, smoothing: float = 0.0, coverage_loss: float = 0.0
) -> torch.Tensor:
    """Summed cross-entropy over the batch's target tokens (padding ignored), plus
    ``coverage_loss`` times the coverage loss (training only)."""
    logits, attn = model(batch.src, batch.src_mask, batch.tgt_in)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        batch.tgt_out.reshape(-1),
        ignore_index=PAD,
        label_smoothing=smoothing,
        reduction="sum",
    )
    if coverage_loss:
        loss = loss + coverage_loss * coverage_loss_sum(attn, batch.tgt_out != PAD)
    return loss


@torch.no_grad()
def nll(model, src, tgt, *, batch_tokens: int, device) -> tuple[float, int]:
    """Total NLL in nats of every target token (with </s>) and their number."""
    was = model.training
    model.eval()
    total, n = 0.0, 0
    for idx in token_batches(src, tgt, batch_tokens):
        b = make_batch(idx, src, tgt).to(device)
        total += float(loss_sum(model, b).double())
        n += b.tokens
    model.train(was)
    return total, n


@torch.no_grad()
def pointer_statistics(model, src, out, *, batch_tokens: int, device) -> dict:
    """Teacher-forced over a pointer-generator's own outputs ``out`` (ids without
    </s>): the mean p_gen over output tokens (</s> included), and the share of
    output tokens whose probability came mostly (over half) from copying."""
    was = model.training
    model.eval()
    p_sum, copied, n = 0.0, 0, 0
    for idx in token_batches(src, out, batch_tokens):
        b = make_batch(idx, src, out).to(device)
        p_gen, share = model.copy_parts(b.src, b.src_mask, b.tgt_in, b.tgt_out)
        real = b.tgt_out != PAD
        p_sum += float(p_gen[real].double().sum())
        copied += int((share[real] > 0.5).sum())
        n += int(real.sum())
    model.train(was)
    return {
        "mean_p_gen": round(p_sum / n, 6),
        "copied_token_share": round(copied / n, 6),
    }


def translate(
    model, tok, src, *, batch: int, a: float, b: int, device, oov=None
) -> list[str]:
    """Greedy translations of encoded sources, in input order (``oov``: each
    sentence's copied unknown spans, for a pointer-generator)."""
    ids = decode_corpus(model, src, batch=batch, a=a, b=b, device=device)
    oov = oov or [()] * len(ids)
    return [decode(tok, x, o) for x, o in zip(ids, oov, strict=True)]


def _validate(
    model,
    tok,
    valid_src,
    valid_tgt,
    valid_refs: list[str],
    valid_oov,
    bleu_idx: list[int],
    cfg,
    *,
    device,
) -> tuple[float, float | None]:
    """The valid loss per target token and greedy BLEU on the ``bleu_idx`` verses
    (None without them)."""
    v_nll, v_tok = nll(
        model, valid_src, valid_tgt, batch_tokens=cfg.batch_tokens, device=device
    )
    bleu = None
    if bleu_idx:
        hyps = translate(
            model,
            tok,
            [valid_src[i] for i in bleu_idx],
            batch=cfg.eval_batch,
            a=cfg.max_len_a,
            b=cfg.max_len_b,
            device=device,
            oov=[valid_oov[i] for i in bleu_idx] if valid_oov else None,
        )
        bleu = sacrebleu.corpus_bleu(hyps, [[valid_refs[i] for i in bleu_idx]]).score
    return v_nll / v_tok, bleu


class NmtTask(Task):
    """Teacher-forced translation batches for firth.training.fit: each epoch groups
    the training pairs into batches of about ``batch_tokens`` target tokens, in an
    order drawn from (seed, epoch); validation is the valid loss and greedy BLEU
    on the ``bleu_idx`` verses."""

    def __init__(
        self, model, data: dict, cfg: NmtCommon, *, seed, accel, group, coverage_loss
    ):
        self.model, self.data, self.cfg, self.seed = model, data, cfg, seed
        self.accel, self.group, self.coverage_loss = accel, group, coverage_loss
        self.forward = None  # wrapped after fit moved the model to its device

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        gen = torch.Generator().manual_seed(self.seed * 100_003 + epoch)
        d = self.data
        return token_batches(
            d["train_src"], d["train_tgt"], self.cfg.batch_tokens, generator=gen
        )

    def loss(self, idx: list[int]):
        if self.forward is None:
            self.forward = distributed.wrap(
                self.model, self.group, self.accel.device, find_unused=False
            )
        src, tgt, group = self.data["train_src"], self.data["train_tgt"], self.group
        # the global batch's target tokens (y and </s>), as make_batch counts them
        tokens = sum(len(tgt[i]) + 1 for i in idx)
        part, weight = idx, 1.0
        if group.active:  # this rank's sentences; an empty share still steps
            part = idx[group.rank :: group.world] or idx[:1]
            weight = 1.0 if group.rank < len(idx) else 0.0
        batch = make_batch(part, src, tgt).to(self.accel)
        loss = loss_sum(
            self.forward, batch, self.cfg.label_smoothing, self.coverage_loss
        )
        if group.active:  # DDP averages over ranks: undo it, divide by all tokens
            objective = loss * (weight * group.world / tokens)
        else:
            objective = loss / tokens
        return objective, loss.item() * weight, tokens / group.world

    def validate(self) -> tuple[float, dict]:
        d = self.data
        v_loss, bleu = _validate(
            self.model,
            d["tok"],
            d["valid_src"],
            d["valid_tgt"],
            d["valid_refs"],
            d["valid_oov"],
            d["bleu_idx"],
            self.cfg,
            device=self.accel.device,
        )
        fields = {"valid_loss": v_loss, "valid_perplexity": math.exp(v_loss)}
        return v_loss, {**fields, "valid_bleu": bleu}


def train(
    model,
    tok,
    train_src,
    train_tgt,
    valid_src,
    valid_tgt,
    valid_refs: list[str],
    cfg: NmtCommon,
    *,
    seed: int,
    accel: Accel,
    epochs: float,
    group: Group = SINGLE,
    coverage_loss: float = 0.0,
    valid_oov: list[list[str]] | None = None,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    max_steps: int | None = None,
) -> Result:
    """Train ``model`` for ``epochs`` with the ``nmt.common`` settings ``cfg`` on
    ``accel``'s device and precision, as one rank of ``group`` (``coverage_loss``:
    its weight lambda; ``valid_oov``: the valid sentences' copied unknown spans,
    for a pointer-generator). ``stop_after`` (tests) stops after that many
    validations, as a kill would. ``max_steps``: a step
    budget (benchmarks; firth.training.fit). The rate decays after its
    warm-up as ``cfg.decay`` says (firth.schedule)."""
    n_bleu = min(cfg.valid_bleu_sentences, len(valid_src))
    bleu_idx = [round(i * len(valid_src) / n_bleu) for i in range(n_bleu)]
    copy_bleu = None  # the copy-source baseline on the same valid verses
    if n_bleu:
        copy_bleu = sacrebleu.corpus_bleu(
            [
                decode(tok, valid_src[i], valid_oov[i] if valid_oov else ())
                for i in bleu_idx
            ],
            [[valid_refs[i] for i in bleu_idx]],
        ).score
    data = dict(
        tok=tok, train_src=train_src, train_tgt=train_tgt, valid_src=valid_src,
        valid_tgt=valid_tgt, valid_refs=valid_refs, valid_oov=valid_oov,
        bleu_idx=bleu_idx,
    )  # fmt: skip
    task = NmtTask(
        model,
        data,
        cfg,
        seed=seed,
        accel=accel,
        group=group,
        coverage_loss=coverage_loss,
    )
    per_epoch = len(task.epoch_batches(0))
    plan = scheduled_plan(
        cfg, steps_per_epoch=per_epoch, epochs=epochs, decay=cfg.decay
    )
    log.info(
        "%d pairs in batches of <= %d target tokens", len(train_src), cfg.batch_tokens
    )
    result = fit(
        model,
        task,
        plan,
        seed=seed,
        accel=accel,
        group=group,
        checkpoint=checkpoint,
        stop_after=stop_after,
        max_steps=max_steps,
    )
    result.extra = {
        "valid_bleu_sentences": n_bleu,
        "valid_bleu_copy_source": copy_bleu,
        **loss_stats(result),
        "train_target_tokens": round(result.trained),
        "train_target_tokens_per_second": round(
            result.trained / max(result.seconds, 1e-9)
        ),
    }
    return result
