"""The partial-input table: every model (seed mean) against its baseline, each row
a paired bootstrap test on planted per-item evidence; nothing chosen by a test
score."""

import numpy as np
from conftest import nli_eval, tagger_eval
from planted import evidence, tagger_items, tagger_train

from firth.inference import HOLDS
from firth.nli.results import NliItems
from firth.partial_input import partial_input_rows, partial_input_section


def test_every_model_against_its_baseline():
    rows = partial_input_rows(evidence())
    by = {(r.task.split(" (")[0], r.model.split(" (")[0], r.baseline): r for r in rows}
    # analogies: both methods; LMs: every family; translation: every model against
    # both baselines; tagging: every run
    assert ("analogy", "sgns", "only-b (ignores a and a*)") in by
    assert {k[1] for k in by if k[0] == "language model"} == {"kn5", "lstm"}
    nmt = {(k[1], k[2].split(" (")[0]) for k in by if k[0] == "translation"}
    assert nmt == {
        (m, b)
        for m in ("bahdanau", "none", "pointer")
        for b in ("copy-source", "target-side LM")
    }
    assert {k[1] for k in by if k[0] == "tagging"} == {"ner-crf", "ner-softmax"}
    for r in rows:
        assert r.test.kind == "difference" and r.test.n > 0
    lstm = next(r for r in rows if r.model.startswith("lstm"))
    assert lstm.model == "lstm (2 seeds)" and lstm.test.verdict == HOLDS
    assert lstm.test.diff < 0  # bits per character: lower is better
    tag = next(r for r in rows if r.model.startswith("ner-crf"))
    assert tag.model.endswith("sgns (chosen on validation)")


def test_the_initialisation_is_chosen_on_validation_not_test():
    """The random init scores higher on test, the sgns init on validation: the
    table shows sgns."""
    items = tagger_items("ner-crf", f1={"random": 0.9, "sgns": 0.6}, invalid=0.0)
    train = [tagger_train("ner-crf", "crf", {"random": 0.4, "sgns": 0.7})]
    ev = evidence(tagging={"ner-crf": (tagger_eval("ner-crf", "crf"), items, train)})
    [row] = [r for r in partial_input_rows(ev) if r.task.startswith("tagging")]
    assert "sgns" in row.model
    assert row.test.a.score < 70  # the sgns models' F1, not the random ones'


def test_section_and_nli_rows():
    ev = evidence()
    sec = partial_input_section(partial_input_rows(ev), nli=False)
    assert "NLI: not run" in sec.intro and "nli.data=[snli]" in sec.intro
    [(_, (head, table))] = sec.tables
    assert head[5] == "difference [95% CI]" and head[7] == "verdict"
    assert all(r[-1].startswith("→ ") for r in table)
    rng = np.random.default_rng(0)
    for model, p in (("pair", 0.8), ("hypothesis", 0.6)):
        run = f"snli-{model}"
        ev.nli[run] = nli_eval(model, accuracy=p, majority=0.34)
        ev.nli_items[run] = NliItems(
            run=run,
            examples_sha256="0" * 64,
            dirty=[0] * 500,
            correct={
                str(s): [int(x) for x in rng.random(500) < p] for s in (13, 14, 15)
            },
            majority=[int(x) for x in rng.random(500) < 0.34],
        )
    rows = partial_input_rows(ev)
    nli = next(r for r in rows if r.task.startswith("NLI"))
    assert nli.model == "premise + hypothesis (3 seeds)"
    assert nli.baseline == "hypothesis-only (majority class: 34.00)"
    assert nli.test.verdict == HOLDS
    sec = partial_input_section(rows, nli=True)
    assert "NLI: not run" not in sec.intro


def test_the_intro_says_how_far_each_unbeaten_model_is():
    rows = partial_input_rows(evidence())
    short = [r for r in rows if r.test.verdict != HOLDS]
    sec = partial_input_section(rows, nli=True)
    if not short:
        assert "Not beaten" not in sec.intro
        return
    for r in short:
        assert f"{r.model} against {r.baseline}: {r.test.interval(2)}" in sec.intro
        # an inconclusive difference says how many test items would decide it
        assert (r.test.needs is not None) == (r.test.verdict == "inconclusive")
        if r.test.needs is not None:
            need = f"would need about {r.test.needs:,} test items, not {r.test.n:,}"
            assert need in sec.intro
    copy = [r for r in short if r.baseline.startswith("copy-source")]
    assert ("Copying the source scores" in sec.intro) == bool(copy)
    held = [r for r in rows if r.test.verdict == HOLDS]
    for r in held:
        assert f"{r.model} against {r.baseline}:" not in sec.intro
