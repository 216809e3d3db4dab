"""WEAT on a trained run's vectors, from the command line (``firth bias``): the
named tests of firth.bias.wordlists or one given by its four word lists, on the
vectors as trained and after hard debiasing (firth.bias)."""

from __future__ import annotations

from pathlib import Path

from firth.bias.debias import debiased_space
from firth.bias.weat import weat
from firth.bias.wordlists import WEAT, WeatTest, WordSet
from firth.embeddings.vectors import load_word2vec
from firth.errors import ConfigError


def custom_test(x: str, y: str, a: str, b: str) -> WeatTest:
    """A WEAT from four comma-separated word lists."""
    sets = []
    for name, words in (("X", x), ("Y", y), ("A", a), ("B", b)):
        parts = tuple(w.strip() for w in words.split(",") if w.strip())
        if not parts:
            raise ConfigError(f"--{name.lower()}: no words given")
        sets.append(WordSet(name, parts))
    return WeatTest("custom", *sets, source="given", human_d=None)


def run_weat(
    folder: Path,
    tests: list[WeatTest],
    *,
    min_words: int,
    permutations: int,
    seed: int,
) -> list[dict]:
    """Each test on the vectors of ``folder`` as trained and hard-debiased."""
    emb = load_word2vec(folder / "vectors.txt")
    space = debiased_space(emb.words, emb.matrix)
    unit, debiased, index = space.unit, space.debiased, space.index
    rows = []
    for t in tests:
        kw = dict(min_words=min_words, permutations=permutations, seed=seed)
        before, after = weat(t, unit, index, **kw), weat(t, debiased, index, **kw)
        rows.append(
            {
                "test": t.key,
                "x": t.x.name,
                "y": t.y.name,
                "a": t.a.name,
                "b": t.b.name,
                "coverage": before.coverage,
                "missing": before.missing,
                "ran": before.ran,
                "d": before.effect_size,
                "p": before.p_value,
                "d_debiased": after.effect_size,
                "p_debiased": after.p_value,
            }
        )
    return rows


def named_tests(keys: list[str]) -> list[WeatTest]:
    unknown = [k for k in keys if k not in WEAT]
    if unknown:
        raise ConfigError(
            f"unknown WEAT test(s) {', '.join(unknown)}; known: {', '.join(WEAT)}"
        )
    return [WEAT[k] for k in keys]
