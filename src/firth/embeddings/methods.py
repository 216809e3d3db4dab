"""One entry point per method: corpus + params -> vectors and training statistics.

Methods: ``sgns``, ``subword`` (fastText-style SGNS), ``ppmi-svd``, ``glove`` and
``gensim`` (the reference: gensim's Word2Vec skip-gram with the same settings).
Words per second: every corpus token (rare words included) times epochs, divided by
the training time (vocabulary building excluded) for the SGNS-style trainers
(ours and gensim); for PPMI-SVD and GloVe, corpus tokens divided by the whole fitting
time (counting, then SVD or all GloVe epochs), since their epochs pass over the
co-occurrence matrix, not the corpus.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from firth.accel import resolve_device
from firth.checkpoint import Checkpoint
from firth.config import Embeddings
from firth.embeddings.cooccurrence import cooccurrence
from firth.embeddings.corpus import Corpus
from firth.embeddings.glove import GloVeConfig, train_glove
from firth.embeddings.ppmi import ppmi, svd_vectors
from firth.embeddings.sgns import SGNSConfig, train_sgns
from firth.embeddings.subword import SubwordSpace, build_space
from firth.embeddings.vectors import Embedding

log = logging.getLogger(__name__)

METHODS = ("sgns", "subword", "ppmi-svd", "glove", "gensim")
# the sections of ``embeddings`` each method reads, besides ``common`` (its stage's
# params in dvc.yaml; a test checks they agree)
READS = {
    "sgns": ("sgns",),
    "subword": ("sgns", "subword"),
    "ppmi-svd": ("ppmi",),
    "glove": ("glove",),
    "gensim": ("gensim",),
}


@dataclass
class TrainedVectors:
    embedding: Embedding
    stats: dict[str, Any]
    loss_curve: list[float] = field(default_factory=list)
    # subword only: the input table and its n-gram space, for unseen words
    table: torch.Tensor | None = None
    space: SubwordSpace | None = None


def sgns_config(cfg: Embeddings, seed: int) -> SGNSConfig:
    c = cfg.common
    return SGNSConfig(
        dim=c.dim,
        window=c.window,
        negatives=c.negatives,
        sample=c.sample,
        epochs=c.epochs,
        lr=cfg.sgns.lr,
        optimizer=cfg.sgns.optimizer,
        curvature_floor=cfg.sgns.curvature_floor,
        batch_centres=cfg.sgns.batch_centres,
        kernel=cfg.sgns.kernel,
        seed=seed,
    )


def _rate(corpus: Corpus, epochs: int, seconds: float) -> float:
    return corpus.vocab.total_tokens * epochs / max(seconds, 1e-9)


def train_method(
    method: str,
    corpus: Corpus,
    sentences: list[list[str]],
    cfg: Embeddings,
    *,
    seed: int,
    progress: bool = True,
    checkpoint: Checkpoint | None = None,
) -> TrainedVectors:
    """Train ``method``; with ``checkpoint``, the iterative trainers (SGNS,
    subword, GloVe) save their state after every epoch and resume from it."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    if method == "gensim":
        return _train_gensim(corpus, sentences, cfg, seed=seed)
    run = TrainerInputs(
        corpus,
        cfg,
        seed,
        resolve_device(cfg.common.device, key="embeddings.common.device"),
        progress,
        checkpoint,
    )
    if method == "ppmi-svd":
        return _train_ppmi_svd(run)
    if method == "glove":
        return _train_glove(run)
    return _train_sgns(run, subword=method == "subword")


@dataclass
class TrainerInputs:
    """What every own trainer is given: the corpus, the settings, the seed, the
    device, whether to show progress, and the checkpoint (resume and save)."""

    corpus: Corpus
    cfg: Embeddings
    seed: int
    device: torch.device
    progress: bool
    checkpoint: Checkpoint | None

    @property
    def resume(self):
        return self.checkpoint.load() if self.checkpoint else None

    @property
    def on_epoch(self):
        return self.checkpoint.save if self.checkpoint else None


def _train_sgns(run: TrainerInputs, *, subword: bool) -> TrainedVectors:
    corpus, cfg, device = run.corpus, run.cfg, run.device
    scfg = sgns_config(cfg, run.seed)
    space = S = None
    if subword:
        sw = cfg.subword
        space, S = build_space(
            corpus.vocab.words,
            min_n=sw.min_n,
            max_n=sw.max_n,
            buckets=sw.buckets,
            combine=sw.combine,
        )
    Z, _C, st = train_sgns(
        corpus,
        scfg,
        device=device,
        composition=S,
        progress=run.progress,
        resume=run.resume,
        on_epoch=run.on_epoch,
    )
    W = Z if S is None else S.to(device) @ Z
    stats = {
        "seconds": st.seconds,
        "words_per_second": _rate(corpus, scfg.epochs, st.seconds),
        "pairs": st.pairs,
        "pairs_per_epoch": st.pairs / max(1, st.epochs),
        "kept_tokens_per_epoch": st.kept_tokens / max(1, st.epochs),
        "first_loss": st.first_loss,
        "final_loss": st.epoch_loss[-1] if st.epoch_loss else float("nan"),
        "device": device.type,
        "config": asdict(scfg),
    }
    if space is not None:
        stats["input_rows"] = space.rows
        stats["used_buckets"] = int(len(space.used_buckets))
    return TrainedVectors(
        Embedding(corpus.vocab.words, W.detach().cpu().numpy().astype(np.float32)),
        stats,
        st.epoch_loss,
        table=Z.detach().cpu() if space is not None else None,
        space=space,
    )


def _train_ppmi_svd(run: TrainerInputs) -> TrainedVectors:
    corpus, cfg = run.corpus, run.cfg
    t0 = time.perf_counter()
    X = cooccurrence(corpus, window=cfg.common.window, progress=run.progress)
    M = ppmi(X, alpha=cfg.ppmi.alpha, shift=cfg.ppmi.shift)
    vecs, S = svd_vectors(M, dim=cfg.common.dim, power=cfg.ppmi.power, seed=run.seed)
    seconds = time.perf_counter() - t0
    return TrainedVectors(
        Embedding(corpus.vocab.words, vecs),
        {
            "seconds": seconds,
            "words_per_second": _rate(corpus, 1, seconds),
            "cooccurrence_nonzeros": int(X.nnz),
            "ppmi_nonzeros": int(M.nnz),
            "top_singular_values": [float(x) for x in S[:5]],
        },
    )


def _train_glove(run: TrainerInputs) -> TrainedVectors:
    corpus, g = run.corpus, run.cfg.glove
    t0 = time.perf_counter()
    X = cooccurrence(
        corpus, window=g.window, weighting="harmonic", progress=run.progress
    )
    gcfg = GloVeConfig(
        dim=run.cfg.common.dim,
        x_max=g.x_max,
        alpha=g.alpha,
        lr=g.lr,
        epochs=g.epochs,
        batch=g.batch,
        seed=run.seed,
    )
    vecs, st = train_glove(
        X,
        gcfg,
        device=run.device,
        progress=run.progress,
        resume=run.resume,
        on_epoch=run.on_epoch,
    )
    seconds = time.perf_counter() - t0
    return TrainedVectors(
        Embedding(corpus.vocab.words, vecs.detach().cpu().numpy().astype(np.float32)),
        {
            "seconds": seconds,
            "words_per_second": _rate(corpus, 1, seconds),
            "nonzeros": st.nonzeros,
            "final_loss": st.epoch_loss[-1],
            "device": run.device.type,
            "config": asdict(gcfg),
        },
        st.epoch_loss,
    )


def _train_gensim(
    corpus: Corpus, sentences: list[list[str]], cfg: Embeddings, *, seed: int
) -> TrainedVectors:
    from gensim.models import Word2Vec

    c = cfg.common
    model = Word2Vec(
        vector_size=c.dim,
        window=c.window,
        negative=c.negatives,
        sg=1,
        hs=0,
        sample=c.sample,
        min_count=c.min_count,
        workers=c.threads or torch.get_num_threads(),
        alpha=cfg.gensim.alpha,
        min_alpha=cfg.gensim.min_alpha,
        seed=seed,
        max_vocab_size=None,
        sorted_vocab=1,
    )
    model.build_vocab(sentences)
    t0 = time.perf_counter()
    model.train(
        sentences,
        total_examples=model.corpus_count,
        total_words=model.corpus_total_words,
        epochs=c.epochs,
        compute_loss=False,
    )
    seconds = time.perf_counter() - t0
    kv = model.wv
    # Same rows, same order as our vocabulary (gensim sorts by count too, but
    # breaks ties differently): take its vectors by word.
    missing = [w for w in corpus.vocab.words if w not in kv.key_to_index]
    if missing:
        raise RuntimeError(f"gensim's vocabulary lacks {len(missing)} of our words")
    vecs = np.stack([kv[w] for w in corpus.vocab.words]).astype(np.float32)
    return TrainedVectors(
        Embedding(corpus.vocab.words, vecs),
        {
            "seconds": seconds,
            "words_per_second": _rate(corpus, c.epochs, seconds),
            "gensim_vocab": len(kv),
            "workers": model.workers,
        },
    )
