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
from firth.config import check_seed
from firth.embeddings.analogy import METHODS, evaluate_analogies, read_analogies
from firth.embeddings.config import Embeddings, EvaluateEmbeddings
from firth.embeddings.corpus import load_corpus
from firth.embeddings.methods import READS, train_method, train_tuned
from firth.embeddings.results import (
    TRAIN_OF,
    EmbeddingDetail,
    EmbeddingEval,
    EmbeddingItems,
    Scores,
)
from firth.embeddings.similarity import cosines, evaluate_pairs, read_pairs
from firth.embeddings.subword import SubwordSpace, compose
from firth.embeddings.tuning import DEV, TEST, TUNED, half, halves
from firth.embeddings.vectors import Embedding, load_word2vec, save_word2vec
from firth.errors import ConfigError, DataError
from firth.io import read_json, sha256_file, shown
from firth.results import Draft, StageOutput, parse, peak_rss_mb
from firth.sources.provenance import checked_raw

log = logging.getLogger(__name__)

SECTION_COLUMNS = ["set", "vocab", "section", "questions", "covered", *METHODS]


def settings_of(cfg: Embeddings, method: str) -> dict:
    """The params ``method`` reads: ``common`` and its own sections (READS), and
    nothing else, so its outputs never record a setting it does not depend on."""
    dumped = cfg.model_dump()
    return {k: dumped[k] for k in ("common", *READS[method])}


def checkpoint(
    folder: Path,
    cfg: Embeddings,
    method: str,
    seed: int,
    corpus: str,
    setting: dict | None = None,
):
    """Where an iterative trainer checkpoints, keyed by its settings and data (one
    file per trained setting of a tuned method)."""
    name = f"{method}-seed{seed}"
    if setting is not None:
        name += f"-k{setting['negatives']}-cds{setting['cds']:g}"
    return Checkpoint(
        folder / f"{name}.pt",
        run_key(
            method=method,
            params=settings_of(cfg, method),
            seed=seed,
            corpus=corpus,
            device=cfg.common.device,
            setting=setting,
        ),
    )


def dev_halves(base: Path) -> dict[str, list]:
    """The dev half of every similarity set fetched into ``base``
    (firth.embeddings.tuning), each checked against its fetch's sha256 first."""
    out = {}
    for src in sorted(base.glob("*/SOURCE.json")):
        if read_json(src).get("format") == "similarity":
            checked_raw(src.parent)
            out[src.parent.name] = halves(read_pairs(src.parent / "pairs.tsv"))[DEV]
    return out


class EmbeddingTraining:
    """One method and seed ready to train: its corpus read and, for the tuned
    methods (SGNS, PPMI-SVD), the dev halves of the similarity sets (``load``
    reads them; the constructor does no I/O)."""

    def __init__(
        self,
        cfg: Embeddings,
        method: str,
        seed: int,
        where: Path,
        *,
        corpus,
        sentences,
        dev: dict[str, list] | None,
        corpus_path: str,
        corpus_sha256: str,
        checkpoints: Path,
    ):
        check_seed(where, f"embeddings.seeds.{method}", seed, cfg.seeds[method])
        if method in TUNED and dev is None:
            raise ConfigError(f"{method} tunes on the similarity sets: pass --eval")
        self.cfg, self.method, self.seed, self.where = cfg, method, seed, where
        self.corpus, self.sentences, self.dev = corpus, sentences, dev
        self.corpus_sha256, self.checkpoints = corpus_sha256, checkpoints
        self.ckpts: list[Checkpoint] = []
        self.settings = {
            "method": method,
            "seed": seed,
            "embeddings": settings_of(cfg, method),
            "corpus": corpus_path,
            "corpus_sha256": corpus_sha256,
        }
        # the train.json record, typed from the start (firth.results.Draft)
        self.stats = Draft(
            TRAIN_OF[method],
            f"train-embeddings-{method}@{seed} stats",
            method=method,
            seed=seed,
            vocab=len(corpus.vocab),
            corpus_tokens=corpus.vocab.total_tokens,
            corpus_sha256=corpus_sha256,
        )

    @classmethod
    def load(
        cls,
        cfg: Embeddings,
        method: str,
        seed: int,
        where: Path,
        *,
        text: Path,
        eval_dir: Path | None,
        checkpoints: Path,
    ) -> EmbeddingTraining:
        """``method`` with ``seed`` on the text ``text`` (tuned methods: on the
        dev halves of the similarity sets in ``eval_dir``), checkpointing into the
        folder ``checkpoints``."""
        check_seed(where, f"embeddings.seeds.{method}", seed, cfg.seeds[method])
        corpus, sentences = load_corpus(
            text,
            min_count=cfg.common.min_count,
            max_sentence_len=cfg.common.max_sentence_len,
        )
        tuned = method in TUNED and eval_dir is not None
        return cls(
            cfg,
            method,
            seed,
            where,
            corpus=corpus,
            sentences=sentences,
            dev=dev_halves(eval_dir) if tuned else None,
            corpus_path=shown(text),
            corpus_sha256=sha256_file(text),
            checkpoints=checkpoints,
        )

    def clear(self) -> None:
        for ckpt in self.ckpts:
            ckpt.clear()

    def fit(self) -> StageOutput:
        """The vectors (SGNS and PPMI-SVD: every setting of ``embeddings.tune``,
        the best on the dev halves kept), their statistics and loss curve; clear
        once written."""
        cfg, method, seed, corpus = self.cfg, self.method, self.seed, self.corpus
        data_hash, settings = self.corpus_sha256, self.settings
        log.info("training %s on %s", method, settings["corpus"])
        if method in TUNED:

            def made(setting):
                self.ckpts.append(
                    checkpoint(self.checkpoints, cfg, method, seed, data_hash, setting)
                )
                return self.ckpts[-1]

            try:
                out = train_tuned(
                    method, corpus, cfg, seed=seed, dev=self.dev, checkpoints=made
                )
            except ValueError as exc:
                raise ConfigError(f"{self.where}: {exc}") from None
        else:
            self.ckpts.append(
                checkpoint(self.checkpoints, cfg, method, seed, data_hash)
            )
            out = train_method(
                method, corpus, self.sentences, cfg, seed=seed, checkpoint=self.ckpts[0]
            )

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
            text = json.dumps(settings, indent=2) + "\n"
            (folder / "config.json").write_text(text)

        stats = self.stats.set(
            **{
                k: v
                for k, v in out.stats.items()
                if k != "config" and k not in self.stats.values
            }
        )
        stats.set(peak_rss_mb=peak_rss_mb(), threads=torch.get_num_threads())
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
        return StageOutput(write, stats.build(), curve)


def evaluate_method(
    vectors: Path,
    eval_dir: Path,
    method: str,
    seeds: list[int],
    cfg: EvaluateEmbeddings,
) -> tuple[EmbeddingEval, EmbeddingDetail, list[list], EmbeddingItems]:
    """Every seed of ``method`` (its folders seed-<seed> under ``vectors``) scored
    on the sets in ``eval_dir``: the eval record, the first seed's detail and
    analogy-section rows, and every seed's per-item statistics."""
    runs: dict[int, Scores] = {}
    first = None
    items: dict = {"method": method, "similarity": {}, "analogy": {}}
    hashes = set()
    for seed in seeds:
        folder = vectors / f"seed-{seed}"
        if not (folder / "vectors.txt").exists():
            raise DataError(
                f"{folder}: no vectors (run train-embeddings-{method}@{seed})"
            )
        metrics, detail, section_rows, per_item = evaluate(
            eval_dir, method, folder, cfg
        )
        runs[seed] = metrics
        hashes.add(sha256_file(folder / "vectors.txt"))
        first = first or ({**detail, "seed": seeds[0]}, section_rows)
        _merge_items(items, per_item, str(seed), method)
    detail, section_rows = first
    where = f"evaluate-embeddings@{method}"
    if len(hashes) < len(runs):
        log.info("%s: %d seeds, %d distinct vectors", method, len(runs), len(hashes))
    return (
        EmbeddingEval.of(method, runs, distinct=len(hashes)),
        parse(detail, EmbeddingDetail, f"{where} detail"),
        section_rows,
        parse(items, EmbeddingItems, f"{where} items"),
    )


def _merge_items(items: dict, per_item: dict, seed: str, method: str) -> None:
    """One seed's per-item statistics into the method's (the pairs, halves,
    candidates and covered questions are the same for every seed)."""
    for name, sim in per_item["similarity"].items():
        entry = items["similarity"].setdefault(
            name, {"gold": sim["gold"], "test": sim["test"], "cosine": {}}
        )
        entry["cosine"][seed] = sim["cosine"]
    for name, ana in per_item["analogy"].items():
        entry = items["analogy"].setdefault(
            name,
            {"candidates": ana["candidates"], "covered": ana["covered"], "hits": {}},
        )
        if entry["covered"] != ana["covered"]:
            raise DataError(
                f"{method}: seed {seed} covers other {name} questions than the "
                "first seed (its vocabulary differs)"
            )
        entry["hits"][seed] = ana["hits"]


def eval_sets(base: Path) -> list[tuple[str, str, Path]]:
    """(name, format, folder) of every evaluation set fetched into ``base``, each
    checked against its fetch's sha256 (a changed gold score is never used)."""
    out = []
    for src in sorted(base.glob("*/SOURCE.json")):
        fmt = read_json(src).get("format")
        if fmt in ("analogy", "similarity"):
            checked_raw(src.parent)
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


def evaluate(
    eval_dir: Path, method: str, folder: Path, cfg
) -> tuple[Scores, dict, list]:
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

    metrics: dict = {
        "vocab": len(emb.words),
        "analogy": {},
        "similarity": {},
        "similarity_dev": {},
    }
    detail: dict = {"method": method, "analogy": {}, "similarity": {}}
    items: dict = {"similarity": {}, "analogy": {}}
    section_rows = []
    for name, fmt, path in eval_sets(eval_dir):
        if fmt == "analogy":
            sections = read_analogies(path / "questions-words.txt")
            # 'top': the ``restrict`` most frequent words, where that cuts the
            # vocabulary; else every word, and 'full' is the same evaluation
            cut = cfg.restrict if 0 < cfg.restrict < len(emb.words) else None
            hits: dict = {}
            top = evaluate_analogies(emb, sections, restrict=cut, hits=hits)
            items["analogy"][name] = {
                "candidates": top["candidates"],
                "covered": hits.pop("covered"),
                "hits": hits,
            }
            full = evaluate_analogies(emb, sections, restrict=None) if cut else top
            for label, res in (("top", top), ("full", full)):
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
            split = halves(pairs)
            # the test half is the benchmark; the dev half chose the settings of
            # the tuned methods (firth.embeddings.tuning)
            res = evaluate_pairs(emb, split[TEST])
            detail["similarity"][name] = res
            metrics["similarity"][name] = {
                k: _round(res[k]) for k in ("spearman", "coverage")
            }
            dev = evaluate_pairs(emb, split[DEV])
            metrics["similarity_dev"][name] = {
                k: _round(dev[k]) for k in ("spearman", "coverage")
            }
            items["similarity"][name] = {
                "gold": [p[2] for p in pairs],
                "test": [int(half(a, b) == TEST) for a, b, _ in pairs],
                "cosine": [
                    None if c is None else round(c, 6) for c in cosines(emb, pairs)
                ],
            }
            if sub is not None:
                res_all = evaluate_pairs(emb, split[TEST], fallback=fallback)
                detail["similarity"][f"{name}/with_oov"] = res_all
                metrics.setdefault("similarity_with_oov", {})[name] = {
                    k: _round(res_all[k]) for k in ("spearman", "coverage")
                }
            log.info(
                "%s %s (test half): Spearman %.4f over %d/%d pairs",
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
    return Scores[float | None].model_validate(metrics), detail, section_rows, items


def _round(x: float) -> float | None:
    """6 decimals; NaN (no covered pair) as None."""
    return None if np.isnan(x) else round(float(x), 6)
