"""The partial-input table picks each task's full model and baseline from the
metrics and computes the gaps."""

from conftest import embedding_eval, lm_eval, nli_eval, nmt_eval, tagger_eval

from firth.partial_input import partial_input_section


def test_partial_input_table_rows_and_gaps():
    emb = {"sgns": embedding_eval("sgns", cos_add=0.25, cos_add_incl=0.0, only_b=0.05)}
    lm = {
        "lstm": lm_eval("lstm", perplexity=50.0, unigram=400.0),
        "kn5": lm_eval("kn", perplexity=70.0, unigram=400.0),
    }
    nmt = {
        "bahdanau": nmt_eval("bahdanau", "bahdanau", 60.0, 70.0),
        # not an attention model
        "none": nmt_eval("none", "none", 70.0, 75.0),
        "copy-source": nmt_eval("copy-source", "copy-source", 50.0, 60.0),
        "target-lm": nmt_eval("target-lm", "target-lm", 2.0, 20.0),
    }
    tag = {"ner-crf": tagger_eval("ner-crf", "crf", f1=(0.4, 0.45), word_only=0.2)}
    sec = partial_input_section(emb, lm, nmt, tag)
    header, rows = sec.tables[0][1]
    by = {(r[0].split(" (")[0], r[3].split(" (")[0]): r for r in rows}
    assert by[("analogy", "only-b")][5] == "20.00"
    assert by[("language model", "unigram")][1] == "lstm"
    assert by[("language model", "unigram")][5] == "-350.00"
    assert by[("translation", "copy-source")][1] == "bahdanau"
    assert by[("translation", "copy-source")][5] == "10.00"
    assert by[("translation", "target-side LM")][5] == "58.00"
    assert by[("tagging", "word-only")][1] == "ner-crf (sgns, seed mean)"
    assert by[("tagging", "word-only")][5] == "25.00"
    assert "NLI: not run" in sec.intro and "nli.data=[snli]" in sec.intro
    nli = {
        f"snli-{m}": nli_eval(m, accuracy=acc, majority=0.34)
        for m, acc in (("pair", 0.8), ("hypothesis", 0.65))
    }
    sec = partial_input_section(emb, lm, nmt, tag, nli)
    rows = sec.tables[0][1][1]
    row = next(r for r in rows if r[0].startswith("NLI"))
    assert row[2:6] == [
        "80.00",
        "hypothesis-only (majority class: 34.00)",
        "65.00",
        "15.00",
    ]
    assert "NLI: not run" not in sec.intro
