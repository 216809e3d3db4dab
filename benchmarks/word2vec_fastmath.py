"""word2vec's loop (firth.embeddings.word2vec) compiled with and without numba's
fastmath (which lets the dot products and row updates reassociate, and so
vectorise): kept (subsampled) words per second of one skip-gram epoch on the
default corpus, negative sampling and the hierarchical softmax, each variant twice
in alternation in one process, and the epoch's mean loss (equal to 4 places).

    python benchmarks/word2vec_fastmath.py

Writes benchmarks/results/word2vec_fastmath.json.
"""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))

from common import head_commit, machine, write_result  # noqa: E402


def variant(fastmath: bool) -> types.ModuleType:
    """The module's source compiled with ``fastmath`` and no on-disk cache."""
    src = (ROOT / "src/firth/embeddings/word2vec.py").read_text()
    src = src.replace("@numba.njit(cache=True, fastmath=True)", "@numba.njit(F)")
    src = src.replace("(F)", f"(fastmath={fastmath})")
    name = f"w2v_fastmath_{fastmath}"
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    exec(compile(src, name, "exec"), mod.__dict__)
    return mod


def main() -> None:
    from firth.embeddings.corpus import load_corpus
    from firth.embeddings.sgns import (
        alias_table,
        keep_probabilities,
        noise_distribution,
    )

    text = PROJECT / "data/subsampled/text/train.txt"
    corpus, _ = load_corpus(text, min_count=5, max_sentence_len=10000)
    counts = corpus.vocab.counts
    V, d = len(counts), 100
    mods = {"plain": variant(False), "fastmath": variant(True)}
    rows = []
    for loss in ("ns", "hs"):
        huffman = mods["plain"].huffman
        tree = huffman(counts) if loss == "hs" else huffman(np.array([1, 1]))
        prob, alias = alias_table(noise_distribution(counts, 0.75))
        keep = keep_probabilities(counts, 1e-4, "paper")  # as it was measured
        drawn = np.random.default_rng(1).random(corpus.n_tokens) < keep[corpus.ids]
        ids, sent = corpus.ids[drawn], corpus.sentence[drawn]
        starts = np.flatnonzero(np.r_[True, sent[1:] != sent[:-1]])
        bounds = np.r_[starts, len(ids)].astype(np.int64)
        for name in ("plain", "fastmath", "plain", "fastmath"):
            mod = mods[name]
            W = (np.random.default_rng(1).random((V, d)) - 0.5) / d
            C, Cn = np.zeros((V - 1, d)), np.zeros((V, d))
            rest = (W, C, Cn, tree.codes, tree.points, tree.lengths, prob,
                    alias.astype(np.int64), True, loss == "hs", 5, 5, 0.025,
                    0.025e-4, 0, float(len(ids)))  # fmt: skip
            empty = np.zeros(2, dtype=np.int64)
            mod.train_epoch(ids[:0], empty, *rest, np.zeros(1, np.uint64), True)
            t0 = time.perf_counter()
            total, n = mod.train_epoch(
                ids, bounds, *rest, np.array([7], np.uint64), True
            )
            seconds = time.perf_counter() - t0
            rows.append(
                {
                    "loss": loss,
                    "compiled": name,
                    "kept_tokens": int(len(ids)),
                    "seconds": round(seconds, 3),
                    "kept_words_per_second": round(len(ids) / seconds),
                    "mean_loss": round(total / n, 6),
                }
            )
            print(rows[-1], flush=True)
    speedup = {}
    for loss in ("ns", "hs"):
        rate = {
            c: np.mean([r["kept_words_per_second"] for r in rows
                        if r["loss"] == loss and r["compiled"] == c])
            for c in ("plain", "fastmath")
        }  # fmt: skip
        speedup[loss] = round(float(rate["fastmath"] / rate["plain"]), 3)
    write_result(
        ROOT / "benchmarks/results/word2vec_fastmath.json",
        {
            "command": "python benchmarks/word2vec_fastmath.py",
            "commit": head_commit(ROOT),
            "machine": machine(),
            "corpus": str(text.relative_to(PROJECT)),
            "rows": rows,
            "fastmath_over_plain": speedup,
        },
    )
    print(speedup)


if __name__ == "__main__":
    main()
