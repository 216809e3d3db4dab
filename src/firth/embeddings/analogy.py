"""Word analogies a : b :: c : ? (Mikolov et al. 2013, "Efficient Estimation of
Word Representations in Vector Space"; the Google questions-words set).

Methods, all over unit vectors and a candidate set of the most frequent words:
- ``3cosadd``: argmax_x cos(x, b - a + c), the three input words excluded (the
  standard protocol, and what gensim's ``evaluate_word_analogies`` does);
- ``3cosadd_incl``: the same without the exclusion (it often answers b, Linzen 2016);
- ``3cosmul``: argmax_x cos'(x,b) cos'(x,c) / (cos'(x,a) + 0.001) with
  cos' = (cos + 1) / 2 (Levy and Goldberg 2014), inputs excluded;
- ``only_b``: the nearest neighbour of b, inputs excluded (a baseline that ignores
  a and c: Linzen 2016).

A question is covered when its four words are among the candidates. Words are
matched case-insensitively by upper-casing, the most frequent variant winning, as in
gensim. Accuracy is over covered questions; coverage is covered / all questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from firth.embeddings.vectors import Embedding
from firth.errors import DataError

METHODS = ("3cosadd", "3cosadd_incl", "3cosmul", "only_b")
Question = tuple[str, str, str, str]


@dataclass(frozen=True)
class AnalogySection:
    name: str
    questions: list[Question]


def read_analogies(path: str | Path) -> list[AnalogySection]:
    """Sections (': name' lines) of four-word questions."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found")
    sections: list[AnalogySection] = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            if line.startswith(":"):
                sections.append(AnalogySection(line.lstrip(": ").strip(), []))
                continue
            parts = line.split()
            if len(parts) != 4:
                raise DataError(f"{path}:{line_no}: expected four words, got {line!r}")
            if not sections:
                raise DataError(f"{path}:{line_no}: question before any ': section'")
            sections[-1].questions.append(tuple(parts))  # type: ignore[arg-type]
    if not any(s.questions for s in sections):
        raise DataError(f"{path}: no questions")
    return sections


def _lookup(words: list[str], restrict: int | None) -> dict[str, int]:
    ok = words[:restrict] if restrict else words
    out: dict[str, int] = {}
    for i, w in enumerate(ok):
        out.setdefault(w.upper(), i)
    return out


def _predict(
    unit: np.ndarray, q: np.ndarray, *, chunk: int = 512
) -> dict[str, np.ndarray]:
    """Predicted row per method for questions q (n, 4) of row indices."""
    out = {m: np.empty(len(q), dtype=np.int64) for m in METHODS}
    for s in range(0, len(q), chunk):
        a, b, c = (q[s : s + chunk, k] for k in range(3))
        ca, cb, cc = unit[a] @ unit.T, unit[b] @ unit.T, unit[c] @ unit.T  # (n, R)
        target = unit[b] - unit[a] + unit[c]  # (n, d)
        target /= np.maximum(np.linalg.norm(target, axis=1, keepdims=True), 1e-12)
        add = target @ unit.T  # (n, R): cos up to the row norm (1 or 0)
        out["3cosadd_incl"][s : s + len(a)] = add.argmax(1)
        mul = ((cb + 1) / 2) * ((cc + 1) / 2) / ((ca + 1) / 2 + 1e-3)
        rows = np.arange(len(a))[:, None]
        inputs = np.stack([a, b, c], 1)
        for name, score in (("3cosadd", add), ("3cosmul", mul), ("only_b", cb)):
            score = score.copy()
            score[rows, inputs] = -np.inf
            out[name][s : s + len(a)] = score.argmax(1)
    return out


def evaluate_analogies(
    emb: Embedding,
    sections: list[AnalogySection],
    *,
    restrict: int | None,
    hits: dict | None = None,
) -> dict:
    """Accuracy per method, by section and in total, with coverage.

    ``restrict``: candidates are the ``restrict`` most frequent words (the rows
    of ``emb`` come in frequency order); None = the whole vocabulary. ``hits``
    (a dict, filled in): the covered questions' indices in file order
    (``covered``) and each method's 0/1 answers on them, for the verdicts.
    """
    lookup = _lookup(emb.words, restrict)
    n_rows = len(emb.words) if not restrict else min(restrict, len(emb.words))
    unit = emb.unit[:n_rows]
    result: dict = {"restrict": restrict or 0, "candidates": n_rows, "sections": {}}
    all_q, all_ok = 0, 0
    correct_total = dict.fromkeys(METHODS, 0)
    if hits is not None:
        hits.update({"covered": [], **{m: [] for m in METHODS}})
    for sec in sections:
        idx = [[lookup.get(w.upper(), -1) for w in q] for q in sec.questions]
        where = [all_q + i for i, r in enumerate(idx) if min(r) >= 0]
        covered = np.array([r for r in idx if min(r) >= 0], dtype=np.int64)
        covered = covered.reshape(-1, 4)
        entry = {"questions": len(sec.questions), "covered": len(covered)}
        if len(covered):
            pred = _predict(unit, covered)
            for m in METHODS:
                right = pred[m] == covered[:, 3]
                correct_total[m] += int(right.sum())
                entry[m] = int(right.sum()) / len(covered)
                if hits is not None:
                    hits[m] += [int(x) for x in right]
            if hits is not None:
                hits["covered"] += where
        else:
            entry.update(dict.fromkeys(METHODS, 0.0))
        result["sections"][sec.name] = entry
        all_q += len(sec.questions)
        all_ok += len(covered)
    result["questions"] = all_q
    result["covered"] = all_ok
    result["coverage"] = all_ok / all_q if all_q else 0.0
    for m in METHODS:
        result[m] = correct_total[m] / all_ok if all_ok else 0.0
    return result
