"""Neighbours and analogies from trained word vectors, with the evaluation's rules.

``neighbours``: the k words of highest cosine to each word (the word itself left
out); an out-of-vocabulary word of the subword model gets the vector its n-grams
compose, as in the evaluation's OOV probes. ``analogy`` a : b :: c : ?: 3CosAdd
(Mikolov et al. 2013; Levy and Goldberg 2014), the candidates the ``restrict`` most
frequent words (``evaluate_embeddings.restrict``), a, b and c themselves excluded,
words matched case-insensitively: the rules the analogy evaluation scores by.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from firth.embeddings.vectors import Embedding, load_word2vec
from firth.errors import ConfigError, DataError
from firth.query import NotTrained, loaded, stage_paths


def vectors_folder(root: Path, params: dict, method: str, seed: int | None) -> Path:
    """The vectors folder train-embeddings-<method>@<seed> writes (default seed:
    the method's first)."""
    seeds = params.get("embeddings", {}).get("seeds", {})
    if method not in seeds:
        raise ConfigError(
            f"no embedding method {method!r} in params.yaml "
            f"(embeddings.seeds has: {', '.join(seeds) or 'none'})"
        )
    seed = seeds[method][0] if seed is None else seed
    if seed not in seeds[method]:
        raise ConfigError(
            f"{method} is trained with seeds {seeds[method]} (embeddings.seeds), "
            f"not {seed}"
        )
    folder = stage_paths(root, f"train-embeddings-{method}@{seed}")["out"]
    if not (folder / "vectors.txt").exists():
        raise NotTrained(
            f"{method} (seed {seed}) is not trained yet: "
            f"dvc repro train-embeddings-{method}@{seed}"
        )
    return folder


def _vector(emb: Embedding, folder: Path, word: str) -> np.ndarray | None:
    index = emb.index()
    if word in index:
        return emb.matrix[index[word]]
    if (folder / "subword.pt").exists():
        from firth.embeddings.stage import load_subword
        from firth.embeddings.subword import compose

        space, table = load_subword(folder / "subword.pt")
        vec, known = compose(space, table, [word])
        return vec[0].numpy() if bool(known[0]) else None
    return None


def _vectors(folder: Path) -> Embedding:
    path = folder / "vectors.txt"
    return loaded(("vectors", str(path.resolve())), [path], lambda: load_word2vec(path))


def neighbours(folder: Path, words: list[str], *, k: int) -> list[dict]:
    """[{word, in_vocab, neighbours: [(word, cosine)]}] for each of ``words``;
    no neighbours for a word the vectors cannot represent."""
    emb = _vectors(folder)
    index = emb.index()
    rows = []
    for word in words:
        vec = _vector(emb, folder, word)
        exclude = [index[word]] if word in index else []
        near = [] if vec is None else emb.nearest(vec, k=k, exclude=exclude)
        rows.append({"word": word, "in_vocab": word in index, "neighbours": near})
    return rows


def analogy(
    folder: Path, a: str, b: str, c: str, *, k: int, restrict: int
) -> list[tuple[str, float]]:
    """The k best answers to a : b :: c : ? by 3CosAdd (see the module)."""
    emb = _vectors(folder)
    n = min(restrict, len(emb.words)) if restrict else len(emb.words)
    lookup: dict[str, int] = {}
    for i, w in enumerate(emb.words[:n]):
        lookup.setdefault(w.upper(), i)
    missing = [w for w in (a, b, c) if w.upper() not in lookup]
    if missing:
        raise DataError(
            f"{', '.join(missing)}: not among the {n} most frequent words of "
            f"{folder} (the analogy candidates, evaluate_embeddings.restrict)"
        )
    unit = emb.unit[:n]
    ia, ib, ic = (lookup[w.upper()] for w in (a, b, c))
    target = unit[ib] - unit[ia] + unit[ic]
    target = target / max(float(np.linalg.norm(target)), 1e-12)
    scores = unit @ target  # (n,)
    scores[[ia, ib, ic]] = -np.inf
    top = np.argsort(-scores, kind="stable")[:k]
    return [(emb.words[i], float(scores[i])) for i in top]
