"""Training of a tagger (firth.training.fit): Adam, gradient-norm clipping, one pass
over the shuffled training sentences per epoch, validation after every epoch (entity
F1 for BIO tag sets, token accuracy otherwise), early stopping after ``patience``
epochs without a new best (0 = never), and the best weights kept.

Word dropout (Lample et al. 2016): each training occurrence of a word seen once in
training is read as ``<unk>`` with probability ``word_dropout``, so the unknown
word's row learns something. The epoch's order and its dropout draws come from (seed,
epoch); the model's dropout from torch's generator, which the checkpoint saved after
each epoch carries, so a killed run resumes to the same weights."""

from __future__ import annotations

import logging
import random

import torch

from firth.accel import Accel
from firth.checkpoint import Checkpoint
from firth.tagging.config import TaggerCommon
from firth.tagging.data import UNK, Encoded, Vocab, length_batches, make_batch
from firth.tagging.evaluate import headline, scores
from firth.training import Result, Task, fit_per_epoch

log = logging.getLogger(__name__)


@torch.no_grad()
def predict(
    model, data: Encoded, vocab: Vocab, *, batch: int, device, constrained=False
) -> list:
    """Tag names for every sentence of ``data`` (decoded in length-sorted batches;
    ``constrained``: a CRF's Viterbi under the BIO constraints)."""
    was = model.training
    model.eval()
    out: list = [None] * len(data.words)
    for idx in length_batches([len(w) for w in data.words], batch):
        paths = model.decode(make_batch(data, idx).to(device), constrained=constrained)
        for i, path in zip(idx, paths, strict=True):
            out[i] = [vocab.tags[k] for k in path]
    model.train(was)
    return out


def valid_score(model, data: Encoded, gold, tokens, vocab, *, batch, device, bio):
    pred = predict(model, data, vocab, batch=batch, device=device)
    return headline(scores(gold, pred, tokens=tokens, train_forms=set(), bio=bio))


class TaggerTask(Task):
    """Shuffled sentence batches for firth.training.fit, with word dropout; one
    validation per epoch (entity F1 for BIO tag sets, token accuracy otherwise)."""

    def __init__(self, model, train_data, valid_data, valid_sents, vocab,
                 cfg: TaggerCommon, *, seed, accel, singletons, bio):  # fmt: skip
        self.model, self.train_data, self.valid_data = model, train_data, valid_data
        self.gold = [tags for _, tags in valid_sents]
        self.tokens = [toks for toks, _ in valid_sents]
        self.vocab, self.cfg, self.seed = vocab, cfg, seed
        self.accel, self.singletons, self.bio = accel, singletons, bio

    def epoch_batches(self, epoch: int) -> list[tuple[list[int], list[list[int]]]]:
        """The epoch's sentence batches, each with its words after word dropout
        (order, pools and dropout draws from (seed, epoch)). With ``bucket`` > 0
        the shuffled sentences are cut into pools of ``bucket`` batches, each pool
        sorted by length and cut into batches, and the batches shuffled: batches
        of similar lengths pad little, and every epoch still mixes them anew."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        n, size = len(self.train_data.words), self.cfg.batch
        order = rng.sample(range(n), n)
        batches = []
        pool = size * self.cfg.bucket if self.cfg.bucket else n
        for lo in range(0, n, pool):
            chunk = order[lo : lo + pool]
            if self.cfg.bucket:
                chunk.sort(key=lambda i: len(self.train_data.words[i]))
            batches += [chunk[j : j + size] for j in range(0, len(chunk), size)]
        if self.cfg.bucket:
            rng.shuffle(batches)
        out = []
        for idx in batches:
            words = [
                [
                    UNK
                    if w in self.singletons and rng.random() < self.cfg.word_dropout
                    else w
                    for w in self.train_data.words[i]
                ]
                for i in idx
            ]
            out.append((idx, words))
        return out

    def loss(self, batch):
        idx, words = batch
        b = make_batch(self.train_data, idx, words).to(self.accel)
        loss = self.model.loss(b)
        return loss / len(idx), float(loss.detach()), len(idx)

    def validate(self) -> tuple[float, dict]:
        score = valid_score(
            self.model,
            self.valid_data,
            self.gold,
            self.tokens,
            self.vocab,
            batch=self.cfg.batch * 4,
            device=self.accel.device,
            bio=self.bio,
        )
        return score, {"valid_score": score}


def train(
    model,
    train_data: Encoded,
    valid_data: Encoded,
    valid_sents,
    vocab: Vocab,
    cfg: TaggerCommon,
    *,
    seed: int,
    accel: Accel,
    singletons: set[int],
    bio: bool,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    max_steps: int | None = None,
    desc: str = "train",
) -> Result:
    """Train ``model`` (built under ``seed``) with the ``tagger.common`` settings
    ``cfg`` on ``accel``'s device and precision (validation in fp32). ``stop_after``
    (tests) stops after that many epochs, as a kill would. ``max_steps``: a step
    budget (benchmarks; firth.training.fit)."""
    task = TaggerTask(
        model,
        train_data,
        valid_data,
        valid_sents,
        vocab,
        cfg,
        seed=seed,
        accel=accel,
        singletons=singletons,
        bio=bio,
    )
    return fit_per_epoch(
        model,
        task,
        cfg,
        examples=len(train_data.words),
        score="score",
        unit="sentences",
        seed=seed,
        accel=accel,
        checkpoint=checkpoint,
        stop_after=stop_after,
        max_steps=max_steps,
        desc=desc,
    )
