"""DVC stage evaluate-embeddings@<method>: analogies (3CosAdd with and without
excluding the inputs, 3CosMul, the only-b baseline; by section, over the N most
frequent words and over the whole vocabulary), word-similarity Spearman with pair
coverage, and nearest neighbours of probe words (of unseen words too, for the
subword model) -> reports/embeddings/<method>/.

Every seed of ``embeddings.seeds.<method>`` is scored (data/embeddings/<method>/
seed-<seed>/). eval.json (firth.embeddings.results.EmbeddingEval) holds every
seed's scores under ``runs`` and their spread (mean, sample sd, n) under
``summary``; eval_detail.json and analogy_sections.csv describe the first seed."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np
import torch

from firth import runner
from firth.config import load_sections
from firth.embeddings.analogy import METHODS, evaluate_analogies, read_analogies
from firth.embeddings.methods import METHODS as TRAINERS
from firth.embeddings.results import EmbeddingEval, Scores
from firth.embeddings.similarity import evaluate_pairs, read_pairs
from firth.embeddings.subword import SubwordSpace, compose
from firth.embeddings.vectors import Embedding, load_word2vec
from firth.errors import DataError
from firth.io import atomic_path, read_json, write_json
from firth.results import save

log = logging.getLogger("evaluate_embeddings")


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


def body(args) -> None:
    path = runner.params_path(args)
    cfg, _seed = load_sections("evaluate_embeddings", path)
    seeds = load_sections("embeddings", path)[0].seeds[args.method]
    runs: dict[int, Scores] = {}
    first = None
    for seed in seeds:
        folder = args.root / "data" / "embeddings" / args.method / f"seed-{seed}"
        if not (folder / "vectors.txt").exists():
            raise DataError(
                f"{folder}: no vectors (run train-embeddings-{args.method}@{seed})"
            )
        metrics, detail, section_rows = evaluate(args.root, args.method, folder, cfg)
        runs[seed] = metrics
        first = first or (detail, section_rows)
    detail, section_rows = first
    rep = args.root / "reports" / "embeddings" / args.method
    save(rep / "eval.json", EmbeddingEval.of(args.method, runs))
    write_json(rep / "eval_detail.json", {**detail, "seed": seeds[0]})
    with atomic_path(rep / "analogy_sections.csv") as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["set", "vocab", "section", "questions", "covered", *METHODS])
            w.writerows(section_rows)


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


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("method", choices=TRAINERS)
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
