"""Training and scoring of the neural language models.

Training reads ``batch`` contiguous streams in order, ``bptt`` tokens per step
(truncated backpropagation through time: the state is carried across segments and
detached; a new epoch starts from a fresh state). AdamW, gradient-norm clipping,
a linear warm-up then cosine decay of the learning rate over the planned steps, and
``evals_per_epoch`` validations per epoch. Each validation saves a checkpoint with
the whole training state (weights, optimiser, carried state, random generators,
history), so a killed run resumes where it stopped and ends with the same weights;
the best weights on valid are kept, and ``patience`` validations without a new best
stop the run (early stopping; 0 = never).

On several processes (torch DDP under torchrun, firth.distributed) each rank
trains ``batch / processes`` of the streams (the global batch stays ``batch``
streams), DDP averages the gradients, and rank 0 validates and checkpoints (the
carried state and random generators of every rank included).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field

import torch
from tqdm import tqdm

from firth import distributed
from firth.accel import Accel
from firth.checkpoint import Checkpoint, rng_state, set_rng_state
from firth.distributed import SINGLE, Group
from firth.lm.data import batchify, eval_layout
from firth.lm.models import LanguageModel
from firth.schedule import lr_at

log = logging.getLogger(__name__)


class TrainStep(torch.nn.Module):
    """The training forward (``log_prob_of``) as a module's ``forward``, so DDP
    wraps it; the language model's own parameter names are unchanged."""

    def __init__(self, model: LanguageModel):
        super().__init__()
        self.model = model

    def forward(self, x, y, state):
        return self.model.log_prob_of(x, y, state)


@torch.no_grad()
def score(
    model: LanguageModel,
    stream: torch.Tensor,
    *,
    batch: int,
    bptt: int,
    device: torch.device,
) -> tuple[float, int]:
    """Total NLL in nats of every target of ``stream`` and the number of targets."""
    was = model.training
    model.eval()
    x, y = eval_layout(stream, batch)
    x, y = x.to(device), y.to(device)
    state = model.init_state(x.shape[0], device)
    nll = 0.0
    for t in range(0, x.shape[1], bptt):
        lp, state = model.log_prob_of(x[:, t : t + bptt], y[:, t : t + bptt], state)
        nll -= float(lp.double().sum())
    model.train(was)
    return nll, int((y >= 0).sum())


@dataclass
class TrainResult:
    best_state: dict
    history: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


def _state_to(state, device):
    """A carried state (a tensor, or a tuple of them for the LSTM) on ``device``."""
    if isinstance(state, tuple):
        return tuple(s.to(device) for s in state)
    return state.to(device)


def train(
    model: LanguageModel,
    train_stream: torch.Tensor,
    valid_stream: torch.Tensor,
    cfg,
    *,
    seed: int,
    accel: Accel,
    group: Group = SINGLE,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
) -> TrainResult:
    """Train ``model`` (built under ``seed``) with the ``lm.common`` settings ``cfg``
    on ``accel``'s device and precision, as one rank of ``group``. ``stop_after``
    (tests) stops after that many validations, as a kill would."""
    device = accel.device
    torch.manual_seed(seed + group.rank)  # dropout differs across ranks
    accel.prepare(model)
    # an adaptive-softmax tail may see no target in a step
    step_fn = distributed.wrap(
        TrainStep(model), group, device, find_unused=bool(cfg.cutoffs)
    )
    x, y = batchify(train_stream, cfg.batch)
    rows = distributed.shard(cfg.batch, group, what="lm.common.batch")
    x, y = accel.to(x[rows]), accel.to(y[rows])
    local_batch = x.shape[0]
    steps_per_epoch = math.ceil(x.shape[1] / cfg.bptt)
    total = max(1, math.ceil(cfg.epochs * steps_per_epoch))
    warmup = int(cfg.warmup * total)
    eval_every = max(1, steps_per_epoch // cfg.evals_per_epoch)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
    )
    step, bad, history = 0, 0, []
    best_loss, best_state = math.inf, None
    state = model.init_state(local_batch, device)
    train_nll, train_tokens, train_seconds = 0.0, 0, 0.0
    saved = checkpoint.load() if checkpoint else None
    if saved:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        step, bad, history = saved["step"], saved["bad"], saved["history"]
        best_loss, best_state = saved["best_loss"], saved["best_state"]
        state = saved["state"]
        if group.active:  # one carried state and generator per rank
            state, saved["rng"] = state[group.rank], saved["rng"][group.rank]
        state = _state_to(state, device)
        train_seconds = saved["train_seconds"]
        set_rng_state(saved["rng"], device)
        log.info("resumed at step %d of %d", step, total)
    log.info(
        "%d parameters; %d streams x %d tokens, %d steps/epoch, %d steps, "
        "eval every %d%s",
        sum(p.numel() for p in model.parameters()),
        cfg.batch,
        x.shape[1],
        steps_per_epoch,
        total,
        eval_every,
        f"; {local_batch} streams on each of {group.world} processes"
        if group.active
        else "",
    )
    evals = 0
    bar = tqdm(
        total=total,
        initial=step,
        desc="train",
        unit="step",
        disable=None if group.main else True,
        mininterval=5,
    )
    model.train()
    while step < total:
        pos = (step % steps_per_epoch) * cfg.bptt
        if pos == 0:
            state = model.init_state(local_batch, device)
        xb, yb = x[:, pos : pos + cfg.bptt], y[:, pos : pos + cfg.bptt]
        for g in opt.param_groups:
            g["lr"] = lr_at(step, total, warmup, cfg.lr)
        t0 = time.perf_counter()
        with accel.autocast():
            lp, state = step_fn(xb, yb, state)
        loss = -lp.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        state = model.detach(state)
        accel.synchronize()
        train_seconds += time.perf_counter() - t0
        train_nll += loss.item() * yb.numel()
        train_tokens += yb.numel()
        step += 1
        bar.update(1)
        # validate every eval_every steps, and at the end unless the last
        # validation was under a quarter interval ago (then its weights stand)
        last = history[-1]["step"] if history else 0
        if step % eval_every == 0 or (step == total and step - last > eval_every // 4):
            v_loss = None
            if group.main:  # in fp32; the other ranks wait for the verdict
                v_nll, v_tok = score(
                    model,
                    valid_stream,
                    batch=cfg.eval_batch,
                    bptt=cfg.bptt,
                    device=device,
                )
                v_loss = v_nll / v_tok
            v_loss = distributed.broadcast(v_loss, group)
            train_nll, train_tokens = distributed.sum_floats(
                [train_nll, train_tokens], group
            )
            row = {
                "step": step,
                "epoch": round(step / steps_per_epoch, 4),
                "lr": lr_at(step - 1, total, warmup, cfg.lr),
                "train_loss": train_nll / max(1, train_tokens),
                "valid_loss": v_loss,
                "valid_perplexity": math.exp(v_loss),
                "train_seconds": round(train_seconds, 2),
            }
            history.append(row)
            train_nll, train_tokens = 0.0, 0
            if v_loss < best_loss:
                best_loss, bad = v_loss, 0
                best_state = {
                    k: v.detach().to("cpu").clone()
                    for k, v in model.state_dict().items()
                }
            else:
                bad += 1
            log.info(
                "step %d/%d (epoch %.2f, %.0f tokens/s): train %.4f, valid %.4f "
                "(ppl %.2f)%s",
                step,
                total,
                row["epoch"],
                step * cfg.batch * cfg.bptt / max(train_seconds, 1e-9),
                row["train_loss"],
                v_loss,
                row["valid_perplexity"],
                "" if bad else " best",
            )
            stop = bool(cfg.patience and bad >= cfg.patience)
            carried, rng = state, rng_state(device)
            if checkpoint and group.active:
                carried = distributed.gather(_state_to(state, "cpu"), group)
                rng = distributed.gather(rng, group)
            if checkpoint and group.main:
                checkpoint.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "step": total if stop else step,
                        "bad": bad,
                        "history": history,
                        "best_loss": best_loss,
                        "best_state": best_state,
                        "state": carried,
                        "train_seconds": train_seconds,
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
    tokens_trained = step * cfg.batch * cfg.bptt
    return TrainResult(
        best_state=copy.deepcopy(best_state),
        history=history,
        stats={
            "steps": step,
            "planned_steps": total,
            "steps_per_epoch": steps_per_epoch,
            "epochs_run": round(step / steps_per_epoch, 4),
            "early_stopped": step < total,
            "best_valid_loss": best_loss,
            "best_valid_perplexity": math.exp(best_loss),
            "train_seconds": round(train_seconds, 2),
            "train_tokens_per_second": round(tokens_trained / max(train_seconds, 1e-9)),
        },
    )


@torch.no_grad()
def sample(
    model: LanguageModel,
    prompt_ids: list[int],
    *,
    max_tokens: int,
    temperature: float,
    eos: int,
    generator: torch.Generator,
    device: torch.device,
    segment: int,
) -> list[int]:
    """Ancestral sampling from the full distribution after ``prompt_ids`` (which
    start with </s>); stops at </s> or after ``max_tokens``."""
    model.eval()
    state = model.init_state(1, device)
    ids = torch.tensor(prompt_ids, dtype=torch.long, device=device)[None]
    feats = None
    for t in range(0, ids.shape[1], segment):
        feats, state = model(ids[:, t : t + segment], state)
    out: list[int] = []
    while len(out) < max_tokens:
        logp = model.softmax.log_prob(feats[:, -1]) / temperature
        nxt = int(
            torch.multinomial(
                torch.softmax(logp.double(), -1).cpu(), 1, generator=generator
            )
        )
        if nxt == eos:
            break
        out.append(nxt)
        feats, state = model(torch.tensor([[nxt]], device=device), state)
    return out
