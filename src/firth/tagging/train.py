"""Training of a tagger: Adam, gradient-norm clipping, one pass over the shuffled
training sentences per epoch, validation after every epoch (entity F1 for BIO tag
sets, token accuracy otherwise), early stopping after ``patience`` epochs without a
new best (0 = never), and the best weights kept.

Word dropout (Lample et al. 2016): each training occurrence of a word seen once in
training is read as ``<unk>`` with probability ``word_dropout``, so the unknown
word's row learns something. The epoch's order and its dropout draws come from
(seed, epoch); the model's dropout from torch's generator, which the checkpoint
saved after each epoch carries, so a killed run resumes to the same weights.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from dataclasses import dataclass, field

import torch
from tqdm import tqdm

from firth.accel import Accel
from firth.checkpoint import Checkpoint, rng_state, set_rng_state
from firth.tagging.data import UNK, Encoded, Vocab, length_batches, make_batch
from firth.tagging.evaluate import headline, scores

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    best_state: dict
    history: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


@torch.no_grad()
def predict(model, data: Encoded, vocab: Vocab, *, batch: int, device) -> list:
    """Tag names for every sentence of ``data`` (decoded in length-sorted batches)."""
    was = model.training
    model.eval()
    out: list = [None] * len(data.words)
    for idx in length_batches([len(w) for w in data.words], batch):
        paths = model.decode(make_batch(data, idx).to(device))
        for i, path in zip(idx, paths, strict=True):
            out[i] = [vocab.tags[k] for k in path]
    model.train(was)
    return out


def valid_score(model, data: Encoded, gold, tokens, vocab, *, batch, device, bio):
    pred = predict(model, data, vocab, batch=batch, device=device)
    return headline(scores(gold, pred, tokens=tokens, train_forms=set(), bio=bio))


def train(
    model,
    train_data: Encoded,
    valid_data: Encoded,
    valid_sents,
    vocab: Vocab,
    cfg,
    *,
    seed: int,
    accel: Accel,
    singletons: set[int],
    bio: bool,
    checkpoint: Checkpoint | None = None,
    stop_after: int | None = None,
    desc: str = "train",
) -> TrainResult:
    """Train ``model`` (built under ``seed``) with the ``tagger.common`` settings
    ``cfg`` on ``accel``'s device and precision (validation in fp32). ``stop_after``
    (tests) stops after that many epochs, as a kill would."""
    device = accel.device
    torch.manual_seed(seed)
    accel.prepare(model)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gold = [tags for _, tags in valid_sents]
    tokens = [toks for toks, _ in valid_sents]
    epoch, bad, history, seconds = 0, 0, [], 0.0
    best, best_state = -1.0, copy.deepcopy(model.state_dict())
    saved = checkpoint.load() if checkpoint else None
    if saved:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        epoch, bad, history = saved["epoch"], saved["bad"], saved["history"]
        best, best_state, seconds = saved["best"], saved["best_state"], saved["seconds"]
        set_rng_state(saved["rng"], device)
        log.info("%s: resumed after epoch %d", desc, epoch)
    n = len(train_data.words)
    done = bool(saved and saved.get("stopped"))
    model.train()
    while epoch < cfg.epochs and not done:
        rng = random.Random(seed * 1_000_003 + epoch)
        order = rng.sample(range(n), n)
        total, sents = 0.0, 0
        t0 = time.perf_counter()
        for start in tqdm(
            range(0, n, cfg.batch),
            desc=f"{desc} epoch {epoch + 1}",
            disable=None,
            leave=False,
            mininterval=5,
        ):
            idx = order[start : start + cfg.batch]
            words = [
                [
                    UNK if w in singletons and rng.random() < cfg.word_dropout else w
                    for w in train_data.words[i]
                ]
                for i in idx
            ]
            b = make_batch(train_data, idx, words).to(accel)
            with accel.autocast():
                loss = model.loss(b)
            opt.zero_grad(set_to_none=True)
            (loss / len(idx)).backward()
            if cfg.clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            opt.step()
            total += float(loss.detach())
            sents += len(idx)
        seconds += time.perf_counter() - t0
        epoch += 1
        score = valid_score(
            model,
            valid_data,
            gold,
            tokens,
            vocab,
            batch=cfg.batch * 4,
            device=device,
            bio=bio,
        )
        history.append(
            {
                "epoch": epoch,
                "train_loss": total / sents,
                "valid_score": score,
                "train_seconds": round(seconds, 2),
            }
        )
        if score > best:
            best, bad = score, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
        done = bool(cfg.patience and bad >= cfg.patience)
        log.info(
            "%s: epoch %d, train loss %.3f, valid %s %.4f%s",
            desc,
            epoch,
            total / sents,
            "F1" if bio else "accuracy",
            score,
            " (stop)" if done else "",
        )
        if checkpoint:
            checkpoint.save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "epoch": epoch,
                    "bad": bad,
                    "history": history,
                    "best": best,
                    "best_state": best_state,
                    "seconds": seconds,
                    "stopped": done,
                    "rng": rng_state(device),
                }
            )
        if stop_after is not None and len(history) >= stop_after and not done:
            break
    best_epoch = max(history, key=lambda r: r["valid_score"])["epoch"] if history else 0
    return TrainResult(
        best_state,
        history,
        {
            "epochs": epoch,
            "best_epoch": best_epoch,
            "best_valid_score": best,
            "train_seconds": round(seconds, 2),
            "sentences_per_second": round(n * epoch / seconds, 1) if seconds else None,
            "early_stopped": done,
        },
    )
