"""Training and scoring of the neural language models.

Training (firth.training.fit) reads ``batch`` contiguous streams in order,
``bptt`` tokens per step (truncated backpropagation through time: the state is
carried across segments and detached; a new epoch starts from a fresh state).
AdamW, gradient-norm clipping, a linear warm-up then cosine decay of the learning
rate over the planned steps, and ``evals_per_epoch`` validations per epoch, each
saving a checkpoint (the carried state included): a killed run resumes where it
stopped and ends with the same weights. The best weights on valid are kept;
``patience`` validations without a new best stop the run (0 = never).

On several processes (torch DDP under torchrun, firth.distributed) each rank
trains ``batch / processes`` of the streams (the global batch stays ``batch``
streams), DDP averages the gradients, and rank 0 validates and checkpoints (the
carried state and random generators of every rank included).
"""

from __future__ import annotations

import logging
import math

import torch

from firth import distributed
from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.distributed import SINGLE, Group
from firth.lm.config import LmCommon
from firth.lm.data import batchify, eval_layout
from firth.lm.models import LanguageModel
from firth.training import Result, Task, fit, loss_stats, scheduled_plan

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


def _state_to(state, device):
    """A carried state (a tensor, or a tuple of them for the LSTM) on ``device``."""
    if isinstance(state, tuple):
        return tuple(s.to(device) for s in state)
    return state.to(device)


class LmTask(Task):
    """Truncated BPTT over this rank's streams for firth.training.fit: an epoch is
    the streams read left to right, ``bptt`` tokens per step, the hidden state
    carried across steps (detached) and reset at each epoch's start."""

    def __init__(
        self, model, train_stream, valid_stream, cfg: LmCommon, *, accel, group
    ):
        self.model, self.valid_stream, self.cfg = model, valid_stream, cfg
        self.accel, self.group = accel, group
        x, y = batchify(train_stream, cfg.batch)
        rows = distributed.shard(cfg.batch, group, what="lm.common.batch")
        self.x, self.y = accel.to(x[rows]), accel.to(y[rows])
        self.steps_per_epoch = math.ceil(self.x.shape[1] / cfg.bptt)
        self.forward = None  # wrapped after fit moved the model to its device
        self.state = None

    def epoch_batches(self, epoch: int) -> range:
        return range(0, self.x.shape[1], self.cfg.bptt)

    def start_epoch(self) -> None:
        self.state = self.model.init_state(self.x.shape[0], self.accel.device)

    def loss(self, pos: int):
        if self.forward is None:  # an adaptive-softmax tail may see no target
            self.forward = distributed.wrap(
                TrainStep(self.model),
                self.group,
                self.accel.device,
                find_unused=bool(self.cfg.cutoffs),
            )
        xb = self.x[:, pos : pos + self.cfg.bptt]
        yb = self.y[:, pos : pos + self.cfg.bptt]
        lp, state = self.forward(xb, yb, self.state)
        self.state = self.model.detach(state)
        loss = -lp.mean()
        return loss, loss.item() * yb.numel(), yb.numel()

    def validate(self) -> tuple[float, dict]:
        nll, n = score(
            self.model,
            self.valid_stream,
            batch=self.cfg.eval_batch,
            bptt=self.cfg.bptt,
            device=self.accel.device,
        )
        return nll / n, {"valid_loss": nll / n, "valid_perplexity": math.exp(nll / n)}

    def carried(self):
        return _state_to(self.state, "cpu")

    def restore(self, carried) -> None:
        self.state = _state_to(carried, self.accel.device)


def train(
    model: LanguageModel,
    train_stream: torch.Tensor,
    valid_stream: torch.Tensor,
    cfg: LmCommon,
    *,
    seed: int,
    accel: Accel,
    group: Group = SINGLE,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    max_steps: int | None = None,
) -> Result:
    """Train ``model`` (built under ``seed``) with the ``lm.common`` settings ``cfg``
    on ``accel``'s device and precision, as one rank of ``group``. ``stop_after``
    (tests) stops after that many validations, as a kill would. ``max_steps``: a step
    budget (benchmarks; firth.training.fit)."""
    task = LmTask(model, train_stream, valid_stream, cfg, accel=accel, group=group)
    plan = scheduled_plan(cfg, steps_per_epoch=task.steps_per_epoch, epochs=cfg.epochs)
    log.info(
        "%d streams x %d tokens%s",
        cfg.batch,
        task.x.shape[1],
        f"; {task.x.shape[0]} streams on each of {group.world} processes"
        if group.active
        else "",
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
        **loss_stats(result),
        "train_tokens_per_second": round(
            result.steps * cfg.batch * cfg.bptt / max(result.seconds, 1e-9)
        ),
    }
    return result


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
