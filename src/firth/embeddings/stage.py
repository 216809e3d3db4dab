"""The work of the word-vector stages (stages/train_embeddings.py,
stages/evaluate_embeddings.py) given the parsed ``embeddings`` params: one method
trained with one seed (``train``) and every seed of a method scored on the
analogy and similarity sets (``evaluate_method``), each returning what its stage
writes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import torch

from firth.checkpoint import Checkpoint, run_key
from firth.config import Embeddings, EvaluateEmbeddings, check_seed
from firth.embeddings.analogy import METHODS, evaluate_analogies, read_analogies
from firth.embeddings.corpus import load_corpus
from firth.embeddings.methods import READS, train_method
from firth.embeddings.results import (
    EmbeddingDetail,
    EmbeddingEval,
    EmbeddingTrain,
    Scores,
)
from firth.embeddings.similarity import evaluate_pairs, read_pairs
from firth.embeddings.subword import SubwordSpace, compose
from firth.embeddings.vectors import Embedding, load_word2vec, save_word2vec
from firth.errors import DataError
from firth.io import read_json, sha256_file
from firth.results import StageOutput, parse, peak_rss_mb

log = logging.getLogger(__name__)

SECTION_COLUMNS = ["set", "vocab", "section", "questions", "covered", *METHODS]


def settings_of(cfg: Embeddings, method: str) -> dict:
    """The params ``method`` reads: ``common`` and its own sections (READS), and
    nothing else, so its outputs never record a setting it does not depend on."""
    dumped = cfg.model_dump()
    return {k: dumped[k] for k in ("common", *READS[method])}


def checkpoint(root: Path, cfg: Embeddings, method: str, seed: int, corpus: str):
    """Where an iterative trainer checkpoints, keyed by its settings and data."""
    return Checkpoint(
        root / "data" / "checkpoints" / "embeddings" / f"{method}-seed{seed}.pt",
        run_key(
            method=method,
            params=settings_of(cfg, method),
            seed=seed,
            corpus=corpus,
            device=cfg.common.device,
        ),
    )


def train(
    root: Path, cfg: Embeddings, method: str, seed: int, where: Path
) -> tuple[StageOutput, Checkpoint]:
    """``method`` trained with ``seed`` on data/subsampled/text/train.txt: its
    vectors folder, statistics and loss curve; clear the checkpoint once written."""
    check_seed(where, f"embeddings.seeds.{method}", seed, cfg.seeds[method])
    if cfg.common.threads:
        torch.set_num_threads(cfg.common.threads)
    src = root / "data" / "subsampled" / "text" / "train.txt"
    corpus, sentences = load_corpus(
        src,
        min_count=cfg.common.min_count,
        max_sentence_len=cfg.common.max_sentence_len,
    )
    data_hash = sha256_file(src)
    ckpt = checkpoint(root, cfg, method, seed, data_hash)
    log.info("training %s on %s", method, src)
    out = train_method(method, corpus, sentences, cfg, seed=seed, checkpoint=ckpt)
    settings = {
        "method": method,
        "seed": seed,
        "embeddings": settings_of(cfg, method),
        "corpus": str(src.relative_to(root)),
        "corpus_sha256": data_hash,
    }

    def write(folder: Path) -> None:
        save_word2vec(folder / "vectors.txt", out.embedding)
        if (space := out.space) is not None:
            blob = {
                "table": out.table,
                "words": space.words,
                "used_buckets": torch.from_numpy(space.used_buckets),
                "min_n": space.min_n,
                "max_n": space.max_n,
                "buckets": space.buckets,
                "combine": space.combine,
            }
            torch.save(blob, folder / "subword.pt")
        (folder / "config.json").write_text(json.dumps(settings, indent=2) + "\n")

    stats = {k: v for k, v in out.stats.items() if k != "config"}
    stats.update(
        method=method,
        seed=seed,
        vocab=len(corpus.vocab),
        corpus_tokens=corpus.vocab.total_tokens,
        corpus_sha256=data_hash,
        peak_rss_mb=peak_rss_mb(),
        threads=torch.get_num_threads(),
    )
    log.info(
        "%s/seed-%d: %.1f s, %.0f words/s, peak RSS %.0f MB",
        method,
        seed,
        stats["seconds"],
        stats["words_per_second"],
        stats["peak_rss_mb"],
    )
    curve = [
        {"epoch": i, "loss": loss} for i, loss in enumerate(out.loss_curve, start=1)
    ]
    record = parse(stats, EmbeddingTrain, "train-embeddings stats")
    return StageOutput(write, record, curve), ckpt


def evaluate_method(
    root: Path, method: str, seeds: list[int], cfg: EvaluateEmbeddings
) -> tuple[EmbeddingEval, EmbeddingDetail, list[list]]:
    """Every seed of ``method`` scored: the eval record, and the first seed's
    detail and analogy-section rows."""
    runs: dict[int, Scores] = {}
    first = None
    for seed in seeds:
        folder = root / "data" / "embeddings" / method / f"seed-{seed}"
        if not (folder / "vectors.txt").exists():
            raise DataError(
                f"{folder}: no vectors (run train-embeddings-{method}@{seed})"
            )
        metrics, detail, section_rows = evaluate(root, method, folder, cfg)
        runs[seed] = metrics
        first = first or ({**detail, "seed": seeds[0]}, section_rows)
    detail, section_rows = first
    where = f"evaluate-embeddings@{method} detail"
    return (
        EmbeddingEval.of(method, runs),
        parse(detail, EmbeddingDetail, where),
        section_rows,
    )


def eval_sets(root: Path) -> list[tuple[str, str, Path]]:
    """(name, format, folder) of every fetched evaluation set."""
    base = root / "data" / "raw" / "eval"
    out = []
    for src in sorted(base.glob("*/SOURCE.json")):
        fmt = read_json(src).get("format")
        if fmt in ("analogy", "similarity"):
            out.append((src.parent.name, fmt, src.parent))
    if not out:
        raise DataError(f"{base}: no analogy or similarity sets; run fetch-eval")
    return out


def load_subword(path: Path) -> tuple[SubwordSpace, torch.Tensor]:
    blob = torch.load(path, weights_only=True)
    space = SubwordSpace(
        words=list(blob["words"]),
        used_buckets=blob["used_buckets"].numpy(),
        min_n=int(blob["min_n"]),
        max_n=int(blob["max_n"]),
        buckets=int(blob["buckets"]),
        combine=blob["combine"],
    )
    return space, blob["table"]


def neighbours(emb: Embedding, probes: list[str], vectors, *, k: int) -> list[dict]:
    index = emb.index()
    rows = []
    for word, vec in zip(probes, vectors, strict=True):
        if vec is None:
            rows.append({"word": word, "in_vocab": False, "neighbours": []})
            continue
        exclude = [index[word]] if word in index else []
        near = emb.nearest(vec, k=k, exclude=exclude)
        rows.append(
            {
                "word": word,
                "in_vocab": word in index,
                "neighbours": [[w, round(s, 4)] for w, s in near],
            }
        )
    return rows


def evaluate(root: Path, method: str, folder: Path, cfg) -> tuple[Scores, dict, list]:
    """Scores, details and analogy-section rows of the vectors in ``folder``."""
    emb = load_word2vec(folder / "vectors.txt")
    index = emb.index()
    sub = None
    if (folder / "subword.pt").exists():
        sub = load_subword(folder / "subword.pt")

    def fallback(word: str):
        if sub is None:
            return None
        vec, known = compose(sub[0], sub[1], [word])
        return vec[0].numpy() if bool(known[0]) else None

    metrics: dict = {"vocab": len(emb.words), "analogy": {}, "similarity": {}}
    detail: dict = {"method": method, "analogy": {}, "similarity": {}}
    section_rows = []
    for name, fmt, path in eval_sets(root):
        if fmt == "analogy":
            sections = read_analogies(path / "questions-words.txt")
            for label, restrict in (("top", cfg.restrict or None), ("full", None)):
                res = evaluate_analogies(emb, sections, restrict=restrict)
                detail["analogy"][f"{name}/{label}"] = res
                metrics["analogy"].setdefault(name, {})[label] = {
                    k: _round(res[k]) for k in ("coverage", *METHODS)
                }
                for sec, entry in res["sections"].items():
                    section_rows.append(
                        [name, label, sec, entry["questions"], entry["covered"]]
                        + [round(entry[m], 6) for m in METHODS]
                    )
                log.info(
                    "%s %s (%s): coverage %.3f, 3CosAdd %.4f, "
                    "3CosMul %.4f, only-b %.4f",
                    method,
                    name,
                    label,
                    res["coverage"],
                    res["3cosadd"],
                    res["3cosmul"],
                    res["only_b"],
                )
        else:
            pairs = read_pairs(path / "pairs.tsv")
            res = evaluate_pairs(emb, pairs)
            detail["similarity"][name] = res
            metrics["similarity"][name] = {
                k: _round(res[k]) for k in ("spearman", "coverage")
            }
            if sub is not None:
                res_all = evaluate_pairs(emb, pairs, fallback=fallback)
                detail["similarity"][f"{name}/with_oov"] = res_all
                metrics.setdefault("similarity_with_oov", {})[name] = {
                    k: _round(res_all[k]) for k in ("spearman", "coverage")
                }
            log.info(
                "%s %s: Spearman %.4f over %d/%d pairs",
                method,
                name,
                res["spearman"],
                res["covered"],
                res["pairs"],
            )
    unit = emb.unit
    probe_vecs = [unit[index[w]] if w in index else None for w in cfg.probes]
    detail["neighbours"] = neighbours(emb, cfg.probes, probe_vecs, k=cfg.neighbours)
    if sub is not None:
        vecs, known = compose(sub[0], sub[1], cfg.oov_probes)
        pairs = zip(vecs, known, strict=True)
        oov = [v.numpy() if bool(ok) else None for v, ok in pairs]
        detail["oov_neighbours"] = neighbours(
            emb, cfg.oov_probes, oov, k=cfg.neighbours
        )
    return Scores[float | None].model_validate(metrics), detail, section_rows


def _round(x: float) -> float | None:
    """6 decimals; NaN (no covered pair) as None."""
    return None if np.isnan(x) else round(float(x), 6)
