"""Training of the translation models: teacher forcing, cross-entropy with optional
label smoothing, AdamW with a linear warm-up then cosine decay (firth.schedule.lr_at),
gradient-norm clipping, and ``evals_per_epoch`` validations per epoch.

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
import time
from dataclasses import dataclass, field

import sacrebleu
import torch
import torch.nn.functional as F
from tqdm import tqdm

from firth import distributed
from firth.accel import Accel
from firth.checkpoint import Checkpoint, rng_state, set_rng_state
from firth.distributed import SINGLE, Group
from firth.nmt.data import PAD, decode, make_batch, token_batches
from firth.nmt.decode import decode_corpus
from firth.schedule import lr_at

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


@dataclass
class TrainResult:
    best_state: dict
    history: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


def train(
    model,
    tok,
    train_src,
    train_tgt,
    valid_src,
    valid_tgt,
    valid_refs: list[str],
    cfg,
    *,
    seed: int,
    accel: Accel,
    epochs: float,
    group: Group = SINGLE,
    coverage_loss: float = 0.0,
    valid_oov: list[list[str]] | None = None,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
) -> TrainResult:
    """Train ``model`` for ``epochs`` with the ``nmt.common`` settings ``cfg`` on
    ``accel``'s device and precision, as one rank of ``group`` (``coverage_loss``:
    its weight lambda; ``valid_oov``: the valid sentences' copied unknown spans,
    for a pointer-generator). ``stop_after`` (tests) stops after that many
    validations, as a kill would."""
    device = accel.device
    torch.manual_seed(seed + group.rank)  # dropout differs across ranks
    accel.prepare(model)
    forward = distributed.wrap(model, group, device, find_unused=False)

    def epoch_batches(epoch: int) -> list[list[int]]:
        gen = torch.Generator().manual_seed(seed * 100_003 + epoch)
        return token_batches(train_src, train_tgt, cfg.batch_tokens, generator=gen)

    per_epoch = len(epoch_batches(0))
    total = max(1, math.ceil(epochs * per_epoch))
    warmup = int(cfg.warmup * total)
    eval_every = max(1, per_epoch // cfg.evals_per_epoch)
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
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
    )
    step, epoch, pos, bad, history = 0, 0, 0, 0, []
    best_loss, best_state = math.inf, None
    train_loss, train_tokens, train_seconds, seen_tokens = 0.0, 0, 0.0, 0
    saved = checkpoint.load() if checkpoint else None
    if saved:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        step, epoch, pos = saved["step"], saved["epoch"], saved["pos"]
        bad, history = saved["bad"], saved["history"]
        best_loss, best_state = saved["best_loss"], saved["best_state"]
        train_seconds, seen_tokens = saved["train_seconds"], saved["seen_tokens"]
        rng = saved["rng"][group.rank] if group.active else saved["rng"]
        set_rng_state(rng, device)
        log.info("resumed at step %d of %d", step, total)
    log.info(
        "%d parameters; %d pairs in %d batches of <= %d tokens; %d steps, "
        "eval every %d",
        sum(p.numel() for p in model.parameters()),
        len(train_src),
        per_epoch,
        cfg.batch_tokens,
        total,
        eval_every,
    )
    batches = epoch_batches(epoch)
    bar = tqdm(
        total=total,
        initial=step,
        desc="train",
        unit="step",
        disable=None if group.main else True,
        mininterval=5,
    )
    model.train()
    evals = 0
    while step < total:
        if pos >= len(batches):
            epoch, pos = epoch + 1, 0
            batches = epoch_batches(epoch)
        idx = batches[pos]
        # the global batch's target tokens (y and </s>), as make_batch counts them
        tokens = sum(len(train_tgt[i]) + 1 for i in idx)
        part, weight = idx, 1.0
        if group.active:  # this rank's sentences; an empty share still steps
            part = idx[group.rank :: group.world] or idx[:1]
            weight = 1.0 if group.rank < len(idx) else 0.0
        batch = make_batch(part, train_src, train_tgt).to(accel)
        pos += 1
        for g in opt.param_groups:
            g["lr"] = lr_at(step, total, warmup, cfg.lr)
        t0 = time.perf_counter()
        with accel.autocast():
            loss = loss_sum(forward, batch, cfg.label_smoothing, coverage_loss)
        opt.zero_grad(set_to_none=True)
        if group.active:  # DDP averages over ranks: undo it, divide by all tokens
            (loss * (weight * group.world / tokens)).backward()
        else:
            (loss / tokens).backward()
        if cfg.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        accel.synchronize()
        train_seconds += time.perf_counter() - t0
        train_loss += loss.item() * weight
        train_tokens += tokens
        seen_tokens += tokens
        step += 1
        bar.update(1)
        last = history[-1]["step"] if history else 0
        if step % eval_every == 0 or (step == total and step - last > eval_every // 4):
            v_loss, bleu = (
                _validate(
                    model,
                    tok,
                    valid_src,
                    valid_tgt,
                    valid_refs,
                    valid_oov,
                    bleu_idx,
                    cfg,
                    device=device,
                )
                if group.main  # in fp32; the other ranks wait for the verdict
                else (None, None)
            )
            v_loss, bleu = distributed.broadcast((v_loss, bleu), group)
            (train_loss,) = distributed.sum_floats([train_loss], group)
            row = {
                "step": step,
                "epoch": round(step / per_epoch, 4),
                "lr": lr_at(step - 1, total, warmup, cfg.lr),
                "train_loss": train_loss / max(1, train_tokens),
                "valid_loss": v_loss,
                "valid_perplexity": math.exp(v_loss),
                "valid_bleu": bleu,
                "train_seconds": round(train_seconds, 2),
                "train_minutes": round(train_seconds / 60, 3),
            }
            history.append(row)
            train_loss, train_tokens = 0.0, 0
            if v_loss < best_loss:
                best_loss, bad = v_loss, 0
                best_state = {
                    k: v.detach().to("cpu").clone()
                    for k, v in model.state_dict().items()
                }
            else:
                bad += 1
            log.info(
                "step %d/%d (epoch %.2f, %.0f target tokens/s): train %.4f, "
                "valid %.4f (ppl %.2f)%s%s",
                step,
                total,
                row["epoch"],
                seen_tokens / max(train_seconds, 1e-9),
                row["train_loss"],
                v_loss,
                row["valid_perplexity"],
                f", valid BLEU {bleu:.2f}" if bleu is not None else "",
                "" if bad else " best",
            )
            stop = bool(cfg.patience and bad >= cfg.patience)
            rng = rng_state(device)
            if checkpoint and group.active:
                rng = distributed.gather(rng, group)
            if checkpoint and group.main:
                checkpoint.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "step": total if stop else step,
                        "epoch": epoch,
                        "pos": pos,
                        "bad": bad,
                        "history": history,
                        "best_loss": best_loss,
                        "best_state": best_state,
                        "train_seconds": train_seconds,
                        "seen_tokens": seen_tokens,
                        "rng": rng,
                    }
                )
            evals += 1
            if stop:
                log.info("early stop: %d validations without a new best", bad)
                break
            if stop_after is not None and evals >= stop_after:
                bar.close()
                raise KeyboardInterrupt("stop_after reached (test)")
    bar.close()
    return TrainResult(
        best_state=best_state,
        history=history,
        stats={
            "steps": step,
            "planned_steps": total,
            "steps_per_epoch": per_epoch,
            "epochs_run": round(step / per_epoch, 4),
            "early_stopped": step < total,
            "valid_bleu_sentences": n_bleu,
            "valid_bleu_copy_source": copy_bleu,
            "best_valid_loss": best_loss,
            "best_valid_perplexity": math.exp(best_loss),
            "train_seconds": round(train_seconds, 2),
            "train_target_tokens": seen_tokens,
            "train_target_tokens_per_second": round(
                seen_tokens / max(train_seconds, 1e-9)
            ),
        },
    )
