"""Bias in word vectors (firth.bias) against independent answers: WEAT's closed
form and a brute-force permutation test, hard debiasing's geometry (neutral words
orthogonal to the gender direction, equalised pairs symmetric, unit rows), a
planted direction recovered, recoverability that finds a planted label and not
noise, and the stage end to end with the scorecard's finding on its output."""

import json
import math
from itertools import combinations

import numpy as np
import pytest

from firth.bias.debias import (
    gender_direction,
    hard_debias,
    kmeans_correct,
    svm_correct,
    unit_rows,
)
from firth.bias.weat import cover, effect_size, p_value, weat
from firth.bias.wordlists import (
    DEFINITIONAL_PAIRS,
    EQUALIZE_PAIRS,
    GENDER_SPECIFIC,
    WEAT,
    WeatTest,
    WordSet,
)
from firth.embeddings.vectors import Embedding, save_word2vec


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_weat_on_planted_vectors_gives_the_closed_form():
    # A = {e1}, B = {e2}: s(w) = cos(w, e1) - cos(w, e2) = w1 - w2 for unit w
    angles_x = [0.1, 0.3, 0.5]  # near e1
    angles_y = [1.2, 1.0, 1.4, 0.9]  # nearer e2
    vecs = [[1, 0], [0, 1]] + [[math.cos(t), math.sin(t)] for t in angles_x + angles_y]
    unit = unit_rows(np.array(vecs))
    words = ["a", "b", "x0", "x1", "x2", "y0", "y1", "y2", "y3"]
    index = {w: i for i, w in enumerate(words)}
    t = WeatTest(
        "planted",
        WordSet("x", ("x0", "x1", "x2")),
        WordSet("y", ("y0", "y1", "y2", "y3")),
        WordSet("a", ("a",)),
        WordSet("b", ("b",)),
        "test",
        None,
    )
    r = weat(t, unit, index, min_words=1, permutations=10_000, seed=0)
    s_x = [math.cos(a) - math.sin(a) for a in angles_x]
    s_y = [math.cos(a) - math.sin(a) for a in angles_y]
    pooled = s_x + s_y
    mean = sum(pooled) / len(pooled)
    sd = math.sqrt(sum((v - mean) ** 2 for v in pooled) / (len(pooled) - 1))
    d = (sum(s_x) / 3 - sum(s_y) / 4) / sd
    assert r.ran and r.exact
    assert r.effect_size == pytest.approx(d, rel=1e-9)
    assert list(r.s_x) == pytest.approx(s_x) and list(r.s_y) == pytest.approx(s_y)
    # X is the most A-ward split of the seven words: no partition beats it
    assert r.p_value == 0.0


def test_permutation_p_value_matches_brute_force_and_sampling():
    rng = np.random.default_rng(3)
    s_x, s_y = rng.normal(0.3, 1, 6), rng.normal(0, 1, 6)
    s = np.concatenate([s_x, s_y])
    observed = s_x.sum() - s_y.sum()
    count = total = 0
    for c in combinations(range(12), 6):
        inside = np.zeros(12, bool)
        inside[list(c)] = True
        total += 1
        count += s[inside].sum() - s[~inside].sum() > observed + 1e-12
    exact, is_exact = p_value(s_x, s_y, permutations=10_000, seed=0)
    assert is_exact and exact == pytest.approx(count / total)
    sampled, is_exact = p_value(s_x, s_y, permutations=400, seed=0)
    assert not is_exact
    assert abs(sampled - exact) < 0.06  # 400 draws: sd about 0.025
    # the sampled p is never 0
    p0, _ = p_value(np.full(6, 9.0), np.zeros(6), permutations=100, seed=0)
    assert p0 == pytest.approx(1 / 101)


def test_cover_looks_up_as_written_then_lowercased_once():
    index = {"nasa": 0, "Einstein": 1, "art": 2}
    c = cover(("NASA", "Einstein", "art", "Art", "physics"), index)
    assert c.words == ["nasa", "Einstein", "art"] and c.missing == ["physics"]
    assert effect_size(np.array([1.0]), np.array([])) != effect_size(
        np.array([1.0]), np.array([])
    )  # nan without Y


def _planted_space(
    rng, *, extra: int = 600, dim: int = 20, bias: float = 0.0, indirect=False
):
    """Unit vectors over the definitional and equalise words, the WEAT 7 words and
    ``extra`` neutral words; g = e0. Female words lean -g, male +g; each neutral
    word carries ``bias`` times a sign (its planted label) on g, and with
    ``indirect`` also on e1 (the bias debiasing cannot see)."""
    words, rows, label = [], [], []

    def add(w, v):
        if w not in words:
            words.append(w)
            rows.append(v)

    for f, m in DEFINITIONAL_PAIRS + EQUALIZE_PAIRS[::-1]:
        base = rng.normal(0, 0.3, dim)
        base[0] = 0
        for w, sign in ((f, -1), (m, 1)):
            v = base + rng.normal(0, 0.05, dim)
            v[0] = sign * 1.0
            add(w.lower(), v)
    for s in ("x", "y", "a", "b"):
        for w in getattr(WEAT["weat7"], s).words:
            add(w.lower(), rng.normal(0, 1, dim))
    n0 = len(words)
    for i in range(extra):
        v = rng.normal(0, 1, dim)
        sign = 1 if i % 2 else -1
        v[0] = sign * bias * 3 + rng.normal(0, 0.2)
        if indirect:
            v[1] = sign * bias * 3 + rng.normal(0, 0.2)
        add(f"w{i}", v)
        label.append(sign > 0)
    return words, unit_rows(np.array(rows)), n0, np.array(label)


def test_gender_direction_recovers_a_planted_axis():
    rng = np.random.default_rng(0)
    words, unit, _, _ = _planted_space(rng)
    index = {w: i for i, w in enumerate(words)}
    d = gender_direction(unit, index, DEFINITIONAL_PAIRS)
    assert d.vector[0] > 0.98  # oriented female -> male
    assert d.explained[0] > 0.5 and len(d.pairs) == len(DEFINITIONAL_PAIRS)
    assert ("mary", "john") in d.pairs  # "Mary", "John" found by lowercasing


def test_hard_debiasing_geometry():
    rng = np.random.default_rng(1)
    words, unit, _, _ = _planted_space(rng, bias=0.5)
    g = _unit(rng.normal(0, 1, unit.shape[1]) * 0.1 + np.eye(unit.shape[1])[0])
    out, done = hard_debias(
        unit, words, g, specific=GENDER_SPECIFIC, equalise_pairs=EQUALIZE_PAIRS
    )
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    lowered = {w.lower() for w in GENDER_SPECIFIC}
    index = {w: i for i, w in enumerate(words)}
    equalised = {w for p in EQUALIZE_PAIRS for w in (p[0].lower(), p[1].lower())}
    for w, i in index.items():
        if w not in lowered and w not in equalised:
            assert abs(out[i] @ g) < 1e-9, w  # neutral: orthogonal to g
    for w in lowered - equalised:
        if w in index:  # gender-specific, not equalised: unchanged
            assert np.allclose(out[index[w]], unit[index[w]])
    for a, b in EQUALIZE_PAIRS:
        a, b = a.lower(), b.lower()
        if a in index and b in index:
            va, vb = out[index[a]], out[index[b]]
            assert va @ g == pytest.approx(-(vb @ g), abs=1e-9)
            diff = va - vb
            assert np.allclose(diff, (diff @ g) * g, atol=1e-9)  # differ along g only
            w = out[index["w1"]]  # equally far from a neutral word
            assert w @ va == pytest.approx(w @ vb, abs=1e-9)
    assert done["equalised_pairs"] > 20


def test_recoverability_finds_a_planted_label_and_not_noise():
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (200, 10))
    label = np.arange(200) % 2 == 0
    planted = x.copy()
    planted[:, 3] += np.where(label, 2.5, -2.5)
    assert svm_correct(planted, label, folds=5, seed=0).mean() > 0.9
    assert kmeans_correct(planted, label, seed=0).mean() > 0.9
    noise = svm_correct(x, label, folds=5, seed=0).mean()
    assert 0.35 < noise < 0.65
    # k-means picks the better alignment, so it is never below one half
    assert kmeans_correct(x, label, seed=0).mean() >= 0.5


def test_stage_end_to_end_and_the_finding(tmp_path):
    import yaml
    from conftest import ROOT

    from firth.evidence import Evidence, weat_abs_d_metric, weat_sides
    from firth.findings import debiasing_is_shallow
    from firth.inference import Rule
    from stages.evaluate_bias import main

    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["embeddings"]["seeds"]["sgns"] = [13, 14]
    cfg["evaluate_bias"].update(
        tests=["weat1", "weat7", "weat8"],
        permutations=2000,
        recover_words=60,
        recover_restrict=0,
        folds=3,
    )
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(cfg))
    for seed in (13, 14):
        rng = np.random.default_rng(seed)
        words, unit, _, _ = _planted_space(rng, bias=0.4, indirect=True)
        save_word2vec(
            tmp_path / f"vec/seed-{seed}/vectors.txt",
            Embedding(words, unit.astype(np.float32)),
        )
    rep = tmp_path / "rep"
    main(
        [
            "sgns",
            "--params",
            str(params),
            "--vectors",
            str(tmp_path / "vec"),
            "--reports",
            str(rep),
        ]
    )
    ev_json = json.loads((rep / "eval.json").read_text())
    assert ev_json["seeds"] == [13, 14] and ev_json["gender_tests"] == ["weat7"]
    weat1 = ev_json["weat"]["13"][0]
    assert weat1["test"] == "weat1" and not weat1["ran"]  # no flowers planted
    import csv

    with open(rep / "weat.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))  # one row per seed and WEAT, as eval.json
    expect = [(s, w) for s in ("13", "14") for w in ev_json["weat"][s]]
    assert len(table) == len(expect)
    for row, (seed, w) in zip(table, expect, strict=True):
        assert (row["seed"], row["test"], row["ran"]) == (
            seed,
            w["test"],
            str(int(w["ran"])),
        )
        if w["ran"]:
            assert float(row["effect_size"]) == pytest.approx(
                w["effect_size"], abs=1e-6
            )
            assert float(row["effect_size_debiased"]) == pytest.approx(
                w["effect_size_debiased"], abs=1e-6
            )
    from firth.bias.results import BiasEval, BiasItems
    from firth.results import load, load_items

    ev = Evidence(rule=Rule(resamples=200))
    ev.bias = {"sgns": load(rep / "eval.json", BiasEval)}
    ev.bias_items = {"sgns": load_items(rep / "items.json.gz", BiasItems)}
    # the resampled metric on all items is the record's mean |d| (first seed)
    after, before, n = weat_sides(ev, "sgns")
    metric = weat_abs_d_metric(n)
    run = ev.bias["sgns"].runs["13"]
    assert metric.score(before.stats[0]) == pytest.approx(
        run.gender_weat_abs_d, abs=1e-5
    )
    assert metric.score(after.stats[0]) == pytest.approx(
        run.gender_weat_abs_d_debiased, abs=1e-5
    )
    f = debiasing_is_shallow(ev)
    assert len(f.tests) == 3 and f.verdict in ("holds", "does not hold", "inconclusive")
    # the label planted off g too survives debiasing
    assert f.tests[2].verdict == "holds"


def test_bias_planted_on_g_alone_is_not_recoverable():
    rng = np.random.default_rng(5)
    words, unit, n0, label = _planted_space(rng, bias=0.4)
    g = np.eye(unit.shape[1])[0]
    out, _ = hard_debias(
        unit, words, g, specific=GENDER_SPECIFIC, equalise_pairs=EQUALIZE_PAIRS
    )
    before = svm_correct(unit[n0:], label, folds=5, seed=0).mean()
    after = svm_correct(out[n0:], label, folds=5, seed=0).mean()
    assert before > 0.95 and 0.35 < after < 0.65


def test_firth_bias_prints_the_weat_of_a_trained_run(tmp_path):
    import shutil

    import yaml
    from conftest import ROOT
    from typer.testing import CliRunner

    from firth.cli import app

    words, unit, _, _ = _planted_space(np.random.default_rng(7), bias=0.4)
    folder = tmp_path / "data" / "embeddings" / "sgns" / "seed-13"
    save_word2vec(folder / "vectors.txt", Embedding(words, unit.astype(np.float32)))
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["embeddings"]["seeds"]["sgns"] = [13]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    res = CliRunner().invoke(
        app, ["bias", "sgns", "weat7", "weat1", "--repo", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split()[:2] == ["test", "coverage"]
    w7 = next(line for line in lines if line.startswith("weat7"))
    unit_d = weat(
        WEAT["weat7"],
        unit,
        {w: i for i, w in enumerate(words)},
        min_words=4,
        permutations=10_000,
        seed=0,
    ).effect_size
    assert float(w7.split()[2]) == pytest.approx(unit_d, abs=1e-3)
    assert any(line.startswith("weat1") and "not run" in line for line in lines)
    # a custom test: all four lists, or an error
    res = CliRunner().invoke(
        app, ["bias", "sgns", "--x", "math", "--repo", str(tmp_path)]
    )
    assert res.exit_code == 2 and "needs all of --x --y --a --b" in res.output
    res = CliRunner().invoke(
        app,
        ["bias", "sgns", "--x", "math,algebra", "--y", "poetry,art", "--a", "he,man",
         "--b", "she,woman", "--min-words", "2", "--repo", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 0 and res.output.splitlines()[1].startswith("custom")
