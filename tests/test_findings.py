"""The findings table: each verdict against planted metrics (holds, does not
hold, not run), and the report stage puts it first."""

from conftest import embedding_eval, lm_eval, nmt_eval, tagger_eval

from firth.findings import FAILS, HOLDS, MISSING, findings, scorecard


def lm(family, bpc):
    return lm_eval(family, bits_per_char=bpc)


def nmt(run, model, bleu, chrf, **extra):
    return nmt_eval(run, model, bleu, chrf, **extra)


def tagger(run, head, shares, gap):
    return tagger_eval(run, head, shares=shares, gap=gap)


def planted(**over):
    given = {
        "emb": {
            "sgns": embedding_eval(
                "sgns", wordsim=0.30, cos_add=0.20, cos_add_incl=0.01
            ),
            "ppmi-svd": embedding_eval("ppmi-svd", wordsim=0.33),
        },
        "lm": {"kn5": lm("kn", 1.30), "lstm": lm("lstm", 1.20), "l2": lm("lstm", 1.25)},
        "nmt": {
            "bahdanau": nmt("bahdanau", "bahdanau", 30.0, 60.0),
            "none": nmt("none", "none", 5.0, 30.0),
            "pointer": nmt("pointer", "bahdanau", 40.0, 70.0, pointer=True),
            "target-lm": nmt("target-lm", "target-lm", 1.0, 15.0),
            "copy-source": nmt("copy-source", "copy-source", 35.0, 65.0),
        },
        "tagging": {
            "w-crf": tagger("w-crf", "crf", [0.0, 0.0], 0.2),
            "w-softmax": tagger("w-softmax", "softmax", [0.05, 0.0], 0.1),
        },
    }
    given.update(over)
    return {f.claim: f.verdict for f in findings(**given)}


def test_every_finding_holds_on_planted_evidence():
    verdicts = planted()
    assert len(verdicts) == 8
    assert set(verdicts.values()) == {HOLDS}, verdicts


def test_verdicts_turn_when_the_evidence_does():
    v = planted(lm={"kn5": lm("kn", 1.30), "lstm": lm("lstm", 1.31)})
    assert v["An LSTM LM beats Kneser-Ney in bits/char"] == FAILS
    # one seed worse than KN is enough to fail: the claim is about every seed
    v = planted(lm={"kn5": lm("kn", 1.30), "a": lm("lstm", 1.2), "b": lm("lstm", 1.4)})
    assert v["An LSTM LM beats Kneser-Ney in bits/char"] == FAILS
    v = planted(
        tagging={
            "w-crf": tagger("w-crf", "crf", [0.0, 0.01], -0.1),
            "w-softmax": tagger("w-softmax", "softmax", [0.05], 0.1),
        }
    )
    assert v["A CRF head never predicts invalid BIO; a softmax head does"] == FAILS
    emb = planted()["SGNS and PPMI-SVD are close (WordSim-353 within 0.05 Spearman)"]
    assert emb == HOLDS
    far = planted(
        emb={
            "sgns": embedding_eval("sgns", wordsim=0.2),
            "ppmi-svd": embedding_eval("ppmi-svd", wordsim=0.4),
        }
    )
    assert (
        far["SGNS and PPMI-SVD are close (WordSim-353 within 0.05 Spearman)"] == FAILS
    )
    assert far["3CosAdd collapses without excluding the question words"] == MISSING


def test_missing_evidence_is_not_run_never_a_guess():
    v = planted(emb={}, lm={}, nmt={}, tagging={})
    assert set(v.values()) == {MISSING}


def test_section_counts_what_holds():
    found = findings(
        emb={}, lm={"k": lm("kn", 1.3), "l": lm("lstm", 1.2)}, nmt={}, tagging={}
    )
    sec = scorecard(found, budget_note="Budget: tiny.")
    assert sec.title == "Scorecard"
    assert sec.intro.startswith("1 of 8 known findings hold")
    assert "Budget: tiny." in sec.intro
    [(_, (head, rows))] = sec.tables
    assert head[-2:] == ["verdict", "evidence in"] and len(rows) == 8
    # each finding links to the section holding its evidence
    assert {r[-1] for r in rows} == {
        "→ Word embeddings",
        "→ Language models",
        "→ Translation",
        "→ Sequence labelling",
    }
