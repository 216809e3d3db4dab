"""The known findings as tests on planted per-item evidence (tests/planted.py):
each holds on a clear gap, does not hold on the reversed gap, is inconclusive on
equal systems or too few items, and is 'not run' without its evidence."""

import pytest
from conftest import embedding_eval, lm_eval, nmt_eval, tagger_eval
from planted import (
    embedding_items,
    evidence,
    lm_items,
    nmt_items,
    tagger_items,
    tagger_train,
)

from firth.findings import MISSING, findings, tally
from firth.inference import FAILS, HOLDS, INCONCLUSIVE


def verdicts(**over) -> dict[str, str]:
    return {f.key: f.verdict for f in findings(evidence(**over))}


def by_key(**over):
    return {f.key: f for f in findings(evidence(**over))}


def test_every_finding_holds_on_planted_evidence():
    found = by_key()
    assert list(found) == [
        "sgns-ppmi",
        "exclusion",
        "ns-hs",
        "debias",
        "lstm-kn",
        "probe-selectivity",
        "probe-mlp",
        "attention",
        "attention-faithful",
        "pointer-copy",
        "source",
        "crf",
        "contamination",
    ]
    bad = {k: (f.verdict, f.summary) for k, f in found.items() if f.verdict != HOLDS}
    # contamination: the LM's 50 dirty lines decide (the taggers' 4 do not)
    assert not bad, bad
    c = found["contamination"]
    assert c.tests[0].n == 50 and c.labels[0].startswith("language model")
    tagging = [t for lab, t in zip(c.labels, c.tests, strict=True) if "tagging" in lab]
    assert tagging and tagging[0].verdict == INCONCLUSIVE and tagging[0].needs
    # every test resamples the seeds of each side
    att = found["attention"].tests[0]
    assert (att.a.seeds, att.b.seeds) == (2, 2)


def _lm(rate_lstm, rate_kn):
    out = {}
    for run, fam, rate, seed in (
        ("kn5", "kn", rate_kn, 13),
        ("lstm", "lstm", rate_lstm, 13),
        ("lstm-seed14", "lstm", rate_lstm, 14),
    ):
        e = lm_eval(fam).model_copy(update={"run": run, "seed": seed})
        out[run] = (e, lm_items(run, rate, seed))
    return out


def test_verdicts_turn_with_the_evidence():
    assert verdicts(lm=_lm(1.5, 1.2))["lstm-kn"] == FAILS
    assert verdicts(lm=_lm(1.3, 1.3))["lstm-kn"] == INCONCLUSIVE
    # the CRF breaks BIO more often than the softmax head: does not hold
    tag = {}
    for run, head, inv in (("ner-crf", "crf", 0.2), ("ner-softmax", "softmax", 0.0)):
        items = tagger_items(run, f1={"random": 0.7, "sgns": 0.7}, invalid=inv)
        train = [tagger_train(run, head, {"random": 0.5, "sgns": 0.6})]
        tag[run] = (tagger_eval(run, head), items, train)
    crf = by_key(tagging=tag)["crf"]
    assert crf.verdict == FAILS
    invalid, f1 = crf.tests
    assert invalid.verdict == FAILS and f1.verdict == INCONCLUSIVE
    # the initialisation is the one with the better validation score (sgns)
    assert "(sgns)" in crf.labels[0]


def test_equivalence_and_collapse():
    far = (
        {m: embedding_eval(m) for m in ("sgns", "ppmi-svd")},
        {
            "sgns": embedding_items("sgns", noise=0.2, incl_keep=0.8),
            "ppmi-svd": embedding_items("ppmi-svd", noise=3.0, incl_keep=0.8),
        },
    )
    v = verdicts(emb=far)
    assert v["sgns-ppmi"] == FAILS  # Spearman about 0.98 against 0.3
    assert v["exclusion"] == FAILS  # keeps 80% of its accuracy


def test_source_matters_needs_every_model():
    nmt = {}
    for run, model, q, kind in (
        ("bahdanau", "bahdanau", 0.6, "model"),
        ("none", "none", 0.0, "unrelated"),  # as bad as the target-side LM
        ("target-lm", "target-lm", 0.0, "unrelated"),
    ):
        nmt[run] = (nmt_eval(run, model, 1.0, 1.0), nmt_items(run, q, 13, kind=kind))
    f = by_key(nmt=nmt)["source"]
    assert f.verdict in (INCONCLUSIVE, FAILS)
    assert f.note.startswith("1 of 2 translation models")
    assert by_key(nmt=nmt)["pointer-copy"].verdict == MISSING


def test_missing_evidence_is_not_run_never_a_guess():
    empty = {"emb": ({}, {}), "bias": ({}, {}), "attention": ({}, {})}
    empty["word2vec"] = ({}, {}, {})
    v = verdicts(**empty, lm={}, nmt={}, tagging={}, probe=({}, {}))
    assert set(v.values()) == {MISSING}
    # evaluations of the new kinds without their items: not run, saying why
    ev = evidence()
    ev.bias_items, ev.attention_items, ev.probe_items = {}, {}, {}
    found = {f.key: f for f in findings(ev)}
    for key in ("debias", "attention-faithful", "probe-selectivity", "probe-mlp"):
        assert found[key].verdict == MISSING, found[key].summary
    # evaluations without their items.json.gz: not run, and the summary says why
    ev = evidence()
    ev.nmt_items = {}
    f = {f.key: f for f in findings(ev)}["attention"]
    assert f.verdict == MISSING and "per-item statistics" in f.summary


def test_tally():
    # equal LMs, no dirty-line gain: lstm-kn and contamination are inconclusive
    found = findings(evidence(lm=_lm(1.3, 1.3)))
    assert tally(found) == "11 of 13 known findings hold on this run (2 inconclusive)."


def test_the_new_findings_turn_with_the_evidence():
    from planted import attention_evidence, bias_evidence

    # debiasing leaves the WEAT gap: the first test does not hold
    v = verdicts(bias=bias_evidence(before_gap=1.0, after_gap=1.0))
    assert v["debias"] == INCONCLUSIVE
    f = by_key(bias=bias_evidence(before_gap=0.2, after_gap=1.5))["debias"]
    assert f.verdict == FAILS and f.tests[0].verdict == FAILS
    # the bias is not recoverable: chance
    f = by_key(bias=bias_evidence(recovered=0.5))["debias"]
    assert f.verdict != HOLDS and f.tests[1].verdict != HOLDS
    # permuting changes nothing: inconclusive, never "holds"
    assert (
        verdicts(attention=attention_evidence(permuted=0.6))["attention-faithful"]
        == INCONCLUSIVE
    )


def test_negative_sampling_against_the_hierarchical_softmax():
    from planted import word2vec_evidence

    f = by_key()["ns-hs"]
    assert f.verdict == HOLDS, f.summary
    assert [t.kind for t in f.tests] == ["difference"] + ["non-inferiority"] * 3
    assert "thousand kept words/s" in f.tests[0].metric
    assert f.tests[0].diff == pytest.approx(40, rel=0.1)  # 150 vs 110 planted
    # slower negative sampling: the speed test does not hold, nor the finding
    slow = word2vec_evidence(ns_rate=90.0)
    assert verdicts(word2vec=slow)["ns-hs"] == FAILS
    # worse analogies alone leave a majority of benchmarks (2 of 3): holds
    worse = word2vec_evidence(ns_hit=0.2)
    f = by_key(word2vec=worse)["ns-hs"]
    assert f.tests[3].verdict == FAILS and f.verdict == HOLDS
    # blocks of different kept tokens cannot be paired: not run, saying why
    ev = evidence()
    ev.emb_train["w2v-sg-hs"] = [
        t.model_copy(update={"blocks": t.blocks[:-1]})
        for t in ev.emb_train["w2v-sg-hs"]
    ]
    f = {f.key: f for f in findings(ev)}["ns-hs"]
    assert f.verdict == MISSING and "blocks" in f.summary


def test_the_report_tables_negative_sampling_against_the_softmax():
    from firth.embeddings.report import softmax_table

    title, (header, rows) = softmax_table(evidence())
    assert "hierarchical softmax" in header and "items" in header
    assert [r[0] for r in rows] == ["skip-gram"] * 5  # speed, 3 sets, the claim
    assert rows[-1][-1] == "holds (benchmarks: holds)"
    assert softmax_table(evidence(word2vec=({}, {}, {}))) is None
