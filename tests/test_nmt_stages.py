"""The translation stages end to end on real verse pairs (KJV -> WEB, Genesis 1-15
for training, verses of Matthew for valid and test) with the tiny profile's settings:
scores agree with sacreBLEU on the written translations, the copy-source baseline
with sacreBLEU on the sources, a killed run resumes to the same weights."""

from __future__ import annotations

import csv
import json

import pytest
import sacrebleu
import torch
import yaml
from conftest import ROOT, run_stage

from firth.bpe import train_bpe
from firth.nmt.results import NmtEval
from firth.sources import bible

# every model (the tiny profile's DAG keeps only three runs)
NMT_RUNS = {
    "none": {"model": "none", "seed": 13, "epochs": 1.0},
    "bahdanau": {"model": "bahdanau", "seed": 13, "epochs": 1.0},
    "transformer": {"model": "transformer", "seed": 13, "epochs": 1.0},
    "target-lm": {"model": "target-lm", "seed": 13, "epochs": 1.0},
    "pointer": {
        "model": "bahdanau",
        "seed": 13,
        "epochs": 1.0,
        "pointer": True,
        "coverage": True,
        "coverage_loss": 1.0,
    },
}
RUNS = list(NMT_RUNS)
ATTENTION_RUNS = ["bahdanau", "pointer", "transformer"]


def _verses():
    kjv, web = bible.load_version("KJV").texts, bible.load_version("WEB").texts
    ids = sorted(set(kjv) & set(web))
    gen = [i for i in ids if 1001001 <= i < 1006000]
    mat = [i for i in ids if 40005001 <= i < 40007000]
    return kjv, web, gen, mat


def _write(path, ids, kjv, web):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for i in ids:
            f.write(f"{i}\t{kjv[i]}\t{web[i]}\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("nmt")
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    kjv, web, train, held = _verses()
    # two training verses planted in test: the contamination audit must flag them
    valid, test = held[::2][:24], held[1::2][:22] + train[:2]
    params["evaluate_nmt"]["heatmaps"] = [str(test[0])]
    params["nmt"]["runs"] = NMT_RUNS
    params["evaluate_attention"]["runs"] = ATTENTION_RUNS
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    par = root / "data" / "subsampled" / "parallel"
    for name, ids in (("train", train), ("valid", valid), ("test", test)):
        _write(par / f"{name}.tsv", ids, kjv, web)
    tok = root / "data" / "tokenizers" / "parallel"
    tok.mkdir(parents=True)
    lines = [kjv[i] for i in train] + [web[i] for i in train]
    train_bpe(lines, model="char", vocab_size=400, min_frequency=2).save(
        str(tok / "tokenizer.json")
    )
    run_stage(root, "audit-parallel")
    for r in RUNS:
        run_stage(root, f"train-nmt@{r}")
        run_stage(root, f"evaluate-nmt@{r}")
    run_stage(root, "evaluate-nmt-copy-source")
    for r in ATTENTION_RUNS:
        run_stage(root, f"evaluate-attention@{r}")
    run_stage(root, "report")
    return root


def _json(root, *parts):
    return json.loads(root.joinpath(*parts).read_text())


def _translations(root, run):
    with open(root / "data" / "nmt-eval" / run / "test.tsv", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _tests(root):
    rows = (root / "data/subsampled/parallel/test.tsv").read_text().splitlines()
    return [r.split("\t") for r in rows]


@pytest.mark.parametrize("run", [*RUNS, "copy-source"])
def test_scores_match_sacrebleu_on_the_written_outputs(project, run):
    e = _json(project, "reports", "nmt", run, "eval.json")
    assert NmtEval.model_validate(e).run == run  # the file is its schema's
    d = _json(project, "reports", "nmt", run, "eval_detail.json")
    test = _tests(project)
    refs = [t[2] for t in test]
    out = _translations(project, run)
    assert [o["id"] for o in out] == [t[0] for t in test]
    for kind in ("greedy", "beam"):
        hyps = [o[kind] for o in out]
        if run == "copy-source":
            assert hyps == [t[1] for t in test]
        assert e[kind]["bleu"] == pytest.approx(
            sacrebleu.corpus_bleu(hyps, [refs]).score, abs=1e-4
        )
        assert e[kind]["chrf"] == pytest.approx(
            sacrebleu.corpus_chrf(hyps, [refs]).score, abs=1e-4
        )
        assert e[kind]["chrf++"] == pytest.approx(
            sacrebleu.corpus_chrf(hyps, [refs], word_order=2).score, abs=1e-4
        )
        assert sum(b["n"] for b in d["buckets"][kind]) == len(test)
    assert d["signatures"]["bleu"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert "nw:2" in d["signatures"]["chrf++"]


@pytest.mark.parametrize("run", ["bahdanau", "copy-source"])
def test_clean_and_dirty_scores_are_sacrebleu_on_the_audited_subsets(project, run):
    with open(project / "data/audit/parallel/flags.tsv", encoding="utf-8") as f:
        flags = {r["id"]: r["dirty"] == "1" for r in csv.DictReader(f, delimiter="\t")}
    test = _tests(project)
    assert [flags[t[0]] for t in test[-2:]] == [True, True]  # the planted verses
    e = _json(project, "reports", "nmt", run, "eval.json")
    out = _translations(project, run)
    refs = [t[2] for t in test]
    dirty = [flags[t[0]] for t in test]
    for kind in ("greedy", "beam"):
        hyps = [o[kind] for o in out]
        for metric, fn in (
            ("bleu", sacrebleu.corpus_bleu),
            ("chrf", sacrebleu.corpus_chrf),
        ):
            c = e["contamination"][kind][metric]
            for part, keep in (("dirty", True), ("clean", False)):
                h = [x for x, d in zip(hyps, dirty, strict=True) if d == keep]
                r = [x for x, d in zip(refs, dirty, strict=True) if d == keep]
                assert c[part] == pytest.approx(fn(h, [r]).score, abs=1e-4)
            assert c["n_dirty"] == sum(dirty) and c["n_all"] == len(test)
            if c["all"]:
                assert c["clean_vs_all"] == pytest.approx(
                    (c["clean"] - c["all"]) / c["all"]
                )
            else:  # the tiny model may score 0: no relative difference
                assert c["clean_vs_all"] is None
    audit = _json(project, "reports", "audit", "parallel.json")
    assert audit["dirty"] == sum(dirty) and audit["sides"]["target"]["n"] >= 8


def test_target_lm_ignores_the_source(project):
    """One output for every verse, cut at each verse's maximum length."""
    outs = sorted((o["greedy"] for o in _translations(project, "target-lm")), key=len)
    assert all(outs[-1].startswith(o) for o in outs)


def test_attention_heatmap(project):
    d = _json(project, "reports", "nmt", "bahdanau", "eval_detail.json")
    (h,) = d["heatmaps"]
    assert len(h["weights"]) == len(h["output"])
    for row in h["weights"]:
        assert len(row) == len(h["source"])
        assert sum(row) == pytest.approx(1.0, abs=5e-4)
    none = _json(project, "reports", "nmt", "none", "eval_detail.json")
    assert none["heatmaps"] == []


def test_training_records_the_curve(project):
    t = _json(project, "reports", "nmt", "bahdanau", "train.json")
    assert t["kept_weights_valid_loss"] == pytest.approx(t["best_valid_loss"])
    curve = (project / "reports/nmt/bahdanau/curve.csv").read_text().splitlines()
    assert curve[0].startswith("step,epoch,lr,train_loss,valid_loss")
    assert len(curve) >= 2


def test_report_has_the_translation_section(project):
    md = (project / "reports" / "index.md").read_text()
    assert "## Translation" in md
    assert "copy-source" in md


def test_killed_run_resumes_to_the_same_weights(project, tmp_path):
    """Stop after the first validation (as a kill would), rerun: the weights equal
    those of the uninterrupted run."""
    from firth.nmt import stage as nmt_stage
    from firth.nmt import train as nmt_train

    params = yaml.safe_load((project / "params.yaml").read_text())
    params["nmt"]["common"]["evals_per_epoch"] = 3
    params["nmt"]["common"]["patience"] = 0
    root = tmp_path / "p"
    root.mkdir()
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    for sub in ("data/subsampled", "data/tokenizers"):
        import shutil

        shutil.copytree(project / sub, root / sub)
    run_stage(root, "train-nmt@bahdanau")
    full = torch.load(root / "data/nmt/bahdanau/model.pt", weights_only=True)
    real = nmt_train.train

    def killed(*a, **k):
        return real(*a, **k, stop_after=1)

    nmt_train_mod = nmt_stage
    nmt_train_mod.train = killed
    try:
        with pytest.raises(KeyboardInterrupt):
            run_stage(root, "train-nmt@bahdanau")
    finally:
        nmt_train_mod.train = real
    assert (root / "data/checkpoints/nmt/bahdanau.pt").exists()
    run_stage(root, "train-nmt@bahdanau")
    resumed = torch.load(root / "data/nmt/bahdanau/model.pt", weights_only=True)
    for k in full:
        assert torch.equal(full[k], resumed[k]), k
    assert not (root / "data/checkpoints/nmt/bahdanau.pt").exists()


def test_malformed_pairs_name_file_and_line(project, tmp_path, capsys):
    root = tmp_path / "bad"
    par = root / "data/subsampled/parallel"
    par.mkdir(parents=True)
    (root / "params.yaml").write_text((project / "params.yaml").read_text())
    (par / "test.tsv").write_text("1\ta\tb\n2\tonly two fields\n")
    with pytest.raises(SystemExit) as exc:
        run_stage(root, "evaluate-nmt-copy-source")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "test.tsv:2: expected 'id<TAB>source<TAB>target'" in err


def test_unknown_run_is_a_config_error(project, capsys):
    with pytest.raises(SystemExit):
        run_stage(project, "train-nmt@bahdanau", args=["nope"])
    assert "nmt.runs has no run 'nope'" in capsys.readouterr().err


def test_pointer_run_reports_its_copying(project):
    e = _json(project, "reports", "nmt", "pointer", "eval.json")
    t = _json(project, "reports", "nmt", "pointer", "train.json")
    assert (e["pointer"], e["coverage"], e["coverage_loss"]) == (True, True, 1.0)
    assert t["pointer"] is True
    for kind in ("greedy", "beam"):
        p = e[f"{kind}_pointer"]
        assert 0.0 < p["mean_p_gen"] < 1.0
        assert 0.0 <= p["copied_token_share"] <= 1.0
        assert 0.0 <= e[kind]["source_word_share"] <= 1.0
    copy = _json(project, "reports", "nmt", "copy-source", "eval.json")
    assert copy["greedy"]["source_word_share"] == 1.0
    assert "valid_bleu_copy_source" in t
    md = (project / "reports" / "index.md").read_text()
    assert "Copying and repetition" in md
    assert "Bahdanau (additive) + pointer + coverage + coverage loss 1" in md


@pytest.mark.parametrize("run", ATTENTION_RUNS)
def test_attention_faithfulness_is_recorded(project, run):
    from firth.nmt.results import AttentionEval, AttentionItems
    from firth.results import load_items

    e = AttentionEval.model_validate(
        _json(project, "reports", "attention", run, "eval.json")
    )
    n = len(_tests(project))
    assert e.test_pairs == n and set(e.interventions) == {
        "permute",
        "uniform",
        "drop-max",
    }
    # the unedited greedy translations are evaluate-nmt's own greedy outputs
    nmt = _json(project, "reports", "nmt", run, "eval.json")
    assert e.original["bleu"] == pytest.approx(nmt["greedy"]["bleu"], abs=1e-4)
    assert e.original["chrf"] == pytest.approx(nmt["greedy"]["chrf"], abs=1e-4)
    for r in e.interventions.values():
        assert 0 <= r.changed_share <= 1 and 0 <= r.mean_tv <= 1
    items = load_items(
        project / "reports/attention" / run / "items.json.gz", AttentionItems
    )
    assert all(len(v) == n for v in items.bleu.values())
    assert all(len(v) == n for v in items.change.values())
    assert len(items.tau) == e.tau_sentences
    md = (project / "reports" / "index.md").read_text()
    assert "## Is attention an explanation?" in md


def test_identity_intervention_changes_nothing(project):
    from firth.config import load_sections
    from firth.nmt.config import Nmt
    from firth.nmt.data import load_tokenizer, read_pairs
    from firth.nmt.faithfulness import Edit, greedy_ids, output_change
    from firth.nmt.stage import encode_split, load_trained

    cfg, _ = load_sections("nmt", project / "params.yaml", schema=Nmt)
    tok = load_tokenizer(project / "data/tokenizers/parallel/tokenizer.json")
    test = read_pairs(project / "data/subsampled/parallel/test.tsv")
    c = cfg.common
    for run in ATTENTION_RUNS:
        spec = cfg.runs[run]
        model = load_trained(project / "data/nmt" / run, cfg, run, spec, tok, "cpu")
        enc = encode_split(tok, test, spec.pointer)
        same = output_change(
            model, enc.src, enc.tgt, Edit("identity"), batch_tokens=200, device="cpu"
        )
        assert same[:, 0].sum() == 0 and same[:, 2].max() < 1e-6
        kw = dict(batch=c.eval_batch, a=c.max_len_a, b=c.max_len_b, device="cpu")
        assert greedy_ids(model, enc.src, Edit("identity"), **kw) == greedy_ids(
            model, enc.src, None, **kw
        )
        # and the model's attention is left unedited afterwards
        holder = model if run == "transformer" else model.attention
        assert holder.edit is None
