"""One entry point per method: corpus + params -> vectors and training statistics.

Methods: ``sgns``, ``subword`` (fastText-style SGNS), ``ppmi-svd``, ``glove``,
``gensim`` (the reference: gensim's Word2Vec skip-gram with the same settings) and
``w2v-<arch>-<loss>`` (word2vec.c's own loop, firth.embeddings.word2vec: skip-gram
or CBOW, negative sampling or the hierarchical softmax).
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
from firth.embeddings.config import EMBEDDING_METHODS, WORD2VEC_METHODS, Embeddings
from firth.embeddings.cooccurrence import cooccurrence
from firth.embeddings.corpus import Corpus
from firth.embeddings.glove import GloVeConfig, train_glove
from firth.embeddings.ppmi import ppmi, svd_factors, weighted
from firth.embeddings.sgns import SGNSConfig, keep_probabilities, train_sgns
from firth.embeddings.similarity import Pair
from firth.embeddings.subword import SubwordSpace, build_space
from firth.embeddings.tuning import TUNED, choose, grid
from firth.embeddings.vectors import Embedding
from firth.embeddings.word2vec import Word2VecConfig, train_word2vec

log = logging.getLogger(__name__)

METHODS = EMBEDDING_METHODS
# the sections of ``embeddings`` each method reads, besides ``common`` (its stage's
# params in dvc.yaml; a test checks they agree)
READS = {
    "sgns": ("sgns", "tune"),
    "subword": ("sgns", "subword"),
    "ppmi-svd": ("tune",),
    "glove": ("glove",),
    "gensim": ("gensim",),
    **{m: ("word2vec",) for m in WORD2VEC_METHODS},
}


def reference_setting(cfg: Embeddings) -> dict:
    """The one setting of SGNS and PPMI-SVD trained without tuning (benchmarks,
    ``train_method``): ``common.negatives``, cds 0.75, eig 0.5, word vectors."""
    return {
        "negatives": cfg.common.negatives,
        "cds": 0.75,
        "eig": 0.5,
        "context_vectors": False,
    }


@dataclass
class TrainedVectors:
    embedding: Embedding
    stats: dict[str, Any]
    loss_curve: list[float] = field(default_factory=list)
    # subword only: the input table and its n-gram space, for unseen words
    table: torch.Tensor | None = None
    space: SubwordSpace | None = None


def sgns_config(
    cfg: Embeddings,
    seed: int,
    *,
    negatives: int | None = None,
    cds: float = 0.75,
    subword: bool = False,
) -> SGNSConfig:
    """SGNS's settings: ``common`` (window and its weighting, subsampling, epochs),
    ``sgns`` (the optimiser), and the tuned ``negatives`` and ``cds``; for the
    subword model, its own kernel and rate (``subword``)."""
    c = cfg.common
    kernel, lr = (
        (cfg.subword.kernel, cfg.subword.lr)
        if subword
        else (cfg.sgns.kernel, cfg.sgns.lr)
    )
    return SGNSConfig(
        dim=c.dim,
        window=c.window,
        dynamic_window=c.window_weighting == "dynamic",
        negatives=negatives or c.negatives,
        cds=cds,
        sample=c.sample,
        sample_rule=c.sample_rule,
        epochs=c.epochs,
        lr=lr,
        optimizer=cfg.sgns.optimizer,
        curvature_floor=cfg.sgns.curvature_floor,
        batch_centres=cfg.sgns.batch_centres,
        kernel=kernel,
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
    setting: dict | None = None,
) -> TrainedVectors:
    """Train ``method`` once (SGNS and PPMI-SVD with ``setting``, default the
    reference setting; ``train_tuned`` chooses theirs); with ``checkpoint``, the
    iterative trainers (SGNS, subword, GloVe) save their state after every epoch
    and resume from it."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    if method == "gensim":
        return train_gensim(corpus, sentences, cfg, seed=seed)
    run = _inputs(corpus, cfg, seed, progress, lambda _: checkpoint)
    setting = setting or reference_setting(cfg)
    if method == "ppmi-svd":
        t0 = time.perf_counter()
        candidates, stats = _ppmi_svd_grid(run, [setting])
        return _chosen(corpus, candidates, 0, stats, t0, trainings=1)
    if method == "glove":
        return _train_glove(run)
    if method in WORD2VEC_METHODS:
        return _train_word2vec(run, method)
    if method == "subword":
        return _train_sgns(run, subword=True, cds=cfg.subword.cds)
    return _train_sgns(run, subword=False, **_sgns_keys(setting))


def _inputs(corpus, cfg, seed, progress, checkpoints) -> TrainerInputs:
    device = resolve_device(cfg.common.device, key="embeddings.common.device")
    return TrainerInputs(corpus, cfg, seed, device, progress, checkpoints(None))


def _sgns_keys(setting: dict) -> dict:
    return {"negatives": setting["negatives"], "cds": setting["cds"]}


def train_tuned(
    method: str,
    corpus: Corpus,
    cfg: Embeddings,
    *,
    seed: int,
    dev: dict[str, list[Pair]],
    progress: bool = True,
    checkpoints=None,
) -> TrainedVectors:
    """SGNS or PPMI-SVD trained at every setting of ``embeddings.tune`` and the one
    with the best mean Spearman on the ``dev`` halves of the similarity sets kept
    (firth.embeddings.tuning); its statistics hold the whole grid's dev scores.
    ``checkpoints(setting)`` gives each SGNS training its epoch checkpoint."""
    if method not in TUNED:
        raise ValueError(f"{method} is not tuned (tuned: {', '.join(TUNED)})")
    settings = grid(cfg.tune, method)
    if len(settings) > 1 and not dev:
        raise ValueError(
            f"embeddings.tune gives {method} {len(settings)} settings to choose "
            "from, but there is no similarity set to choose on (sources.eval)"
        )
    checkpoints = checkpoints or (lambda _: None)
    run = _inputs(corpus, cfg, seed, progress, checkpoints)
    t0 = time.perf_counter()
    if method == "ppmi-svd":
        candidates, stats = _ppmi_svd_grid(run, settings)
        trainings = len({(s["negatives"], s["cds"]) for s in settings})
    else:
        candidates, stats, trainings = _sgns_grid(run, settings, checkpoints)
    best, table = choose(corpus.vocab.words, candidates, dev)
    log.info(
        "%s: chose %s of %d settings on the dev halves (mean Spearman %s)",
        method,
        table[best]["setting"],
        len(settings),
        table[best]["dev_mean"],
    )
    out = _chosen(corpus, candidates, best, stats, t0, trainings=trainings)
    out.stats.update(tuning=table, setting=table[best]["setting"])
    return out


def _chosen(corpus, candidates, best, stats, t0, *, trainings: int):
    """The ``best`` candidate as the trained vectors, with the grid's statistics
    (its seconds and words per second over every training)."""
    seconds = time.perf_counter() - t0
    setting, vectors = candidates[best]
    stats = dict(stats.get(_key(setting), stats.get("shared", {})))
    epochs = stats.pop("epochs", 1)
    loss = stats.pop("loss_curve", [])
    stats.update(
        seconds=seconds,
        words_per_second=_rate(corpus, epochs * trainings, seconds),
        trainings=trainings,
    )
    return TrainedVectors(Embedding(corpus.vocab.words, vectors), stats, loss)


def _key(setting: dict) -> tuple:
    return (setting["negatives"], setting["cds"])


def _sgns_grid(run: TrainerInputs, settings: list[dict], checkpoints):
    """One SGNS training per (negatives, cds) of the grid; w and w+c from each."""
    candidates, stats = [], {}
    trained: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    for setting in settings:
        key = _key(setting)
        if key not in trained:
            run.checkpoint = checkpoints(setting)
            out, C = _train_sgns(run, subword=False, **_sgns_keys(setting), want_c=True)
            trained[key] = (out.embedding.matrix, C)
            stats[key] = {
                **{k: v for k, v in out.stats.items() if k != "config"},
                "epochs": run.cfg.common.epochs,
                "loss_curve": out.loss_curve,
            }
        W, C = trained[key]
        vectors = W + C if setting["context_vectors"] else W
        candidates.append((setting, vectors.astype(np.float32)))
    return candidates, stats, len(trained)


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


def _train_sgns(
    run: TrainerInputs,
    *,
    subword: bool,
    negatives: int | None = None,
    cds: float = 0.75,
    want_c: bool = False,
):
    corpus, cfg, device = run.corpus, run.cfg, run.device
    scfg = sgns_config(cfg, run.seed, negatives=negatives, cds=cds, subword=subword)
    if scfg.kernel in ("fused", "online") and device.type != "cpu":
        if cfg.common.device != "auto":
            raise ValueError(
                f"the {scfg.kernel} SGNS kernel runs on the CPU, but "
                f"embeddings.common.device is {cfg.common.device!r}: set the kernel "
                "to auto or gather (with its lr) to train on the GPU"
            )
        log.info("sgns: the %s kernel runs on the CPU (device auto)", scfg.kernel)
        device = torch.device("cpu")
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
    out = TrainedVectors(
        Embedding(corpus.vocab.words, W.detach().cpu().numpy().astype(np.float32)),
        stats,
        st.epoch_loss,
        table=Z.detach().cpu() if space is not None else None,
        space=space,
    )
    if want_c:
        return out, _C.detach().cpu().numpy()
    return out


def subsampled(corpus: Corpus, sample: float, rule: str, seed: int) -> Corpus:
    """The corpus with each occurrence kept as SGNS keeps it (``rule``:
    sgns.keep_probabilities; drawn once with ``seed``), before any window is taken:
    Levy, Goldberg and Dagan's 'dirty' subsampling, which SGNS does too."""
    if sample <= 0:
        return corpus
    keep = keep_probabilities(corpus.vocab.counts, sample, rule)
    mask = np.random.default_rng(seed).random(len(corpus.ids)) < keep[corpus.ids]
    return Corpus(corpus.vocab, corpus.ids[mask], corpus.sentence[mask])


def _ppmi_svd_grid(run: TrainerInputs, settings: list[dict]):
    """The co-occurrences counted once (the common window, its weighting, the
    subsampling), then one shifted, smoothed PPMI matrix and SVD per (negatives,
    cds) of the grid, and the eig and w+c variants of each."""
    corpus, c = run.corpus, run.cfg.common
    kept = subsampled(corpus, c.sample, c.sample_rule, run.seed)
    X = cooccurrence(
        kept, window=c.window, weighting=c.window_weighting, progress=run.progress
    )
    candidates, stats, factors = [], {}, {}
    for setting in settings:
        key = _key(setting)
        if key not in factors:
            M = ppmi(X, alpha=setting["cds"], shift=float(setting["negatives"]))
            factors[key] = svd_factors(M, dim=c.dim, seed=run.seed)
            stats[key] = {
                "cooccurrence_nonzeros": int(X.nnz),
                "ppmi_nonzeros": int(M.nnz),
                "kept_tokens": int(len(kept.ids)),
                "top_singular_values": [float(x) for x in factors[key][1][:5]],
            }
        U, S, V = factors[key]
        vectors = weighted(
            U, S, V, eig=setting["eig"], context=setting["context_vectors"]
        )
        candidates.append((setting, vectors))
    return candidates, stats


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


def word2vec_config(cfg: Embeddings, method: str, seed: int) -> Word2VecConfig:
    """``w2v-<arch>-<loss>``'s settings: ``common`` (as gensim gets them: the
    window and its weighting, negatives, subsampling, epochs) and ``word2vec``
    (word2vec.c's starting rate per arch, its floor)."""
    _, arch, loss = method.split("-")
    c, w = cfg.common, cfg.word2vec
    return Word2VecConfig(
        arch=arch,
        loss=loss,
        dim=c.dim,
        window=c.window,
        dynamic_window=c.window_weighting == "dynamic",
        negatives=c.negatives,
        sample=c.sample,
        sample_rule=c.sample_rule,
        epochs=c.epochs,
        alpha=w.alpha_sg if arch == "sg" else w.alpha_cbow,
        min_alpha_ratio=w.min_alpha_ratio,
        seed=seed,
    )


def _train_word2vec(run: TrainerInputs, method: str) -> TrainedVectors:
    """word2vec's own loop on the CPU, one thread (its loop is sequential)."""
    wcfg = word2vec_config(run.cfg, method, run.seed)
    if run.device.type != "cpu" and run.cfg.common.device != "auto":
        raise ValueError(
            f"{method} trains word2vec's loop on the CPU, but "
            f"embeddings.common.device is {run.cfg.common.device!r}"
        )
    W, st = train_word2vec(
        run.corpus,
        wcfg,
        blocks=run.cfg.word2vec.blocks,
        progress=run.progress,
        resume=run.resume,
        on_epoch=run.on_epoch,
    )
    return TrainedVectors(
        Embedding(run.corpus.vocab.words, W),
        {
            "seconds": st.seconds,
            "words_per_second": st.words_per_second,
            "kept_tokens_per_epoch": st.kept_tokens_per_epoch,
            "first_loss": st.loss_per_epoch[0],
            "final_loss": st.loss_per_epoch[-1],
            "device": "cpu",
            "blocks": [
                {"kept_tokens": k, "seconds": round(t, 6)} for k, t in st.blocks
            ],
            "config": asdict(wcfg),
        },
        st.loss_per_epoch,
    )


def train_gensim(
    corpus: Corpus,
    sentences: list[list[str]],
    cfg: Embeddings,
    *,
    seed: int,
    sg: bool = True,
    hs: bool = False,
    alpha: float | None = None,
) -> TrainedVectors:
    """gensim's Word2Vec at ``cfg``'s common settings: skip-gram (``sg``) or CBOW,
    negative sampling or (``hs``) hierarchical softmax without negatives, from
    the rate ``alpha`` (default ``gensim.alpha``); rows in ``corpus``'s
    vocabulary order."""
    from gensim.models import Word2Vec

    c = cfg.common
    if c.sample and c.sample_rule != "word2vec":
        log.warning(
            "gensim subsamples by word2vec.c's rule, not embeddings.common.sample_rule "
            "%r: its vectors are not trained at matched settings",
            c.sample_rule,
        )
    model = Word2Vec(
        vector_size=c.dim,
        window=c.window,
        negative=0 if hs else c.negatives,
        sg=int(sg),
        hs=int(hs),
        sample=c.sample,
        shrink_windows=c.window_weighting == "dynamic",
        min_count=c.min_count,
        workers=c.threads or torch.get_num_threads(),
        alpha=cfg.gensim.alpha if alpha is None else alpha,
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
