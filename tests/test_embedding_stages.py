"""The embedding stages end to end on a real corpus excerpt (gensim's Lee
background corpus) with the tiny profile's settings."""

import json
import shutil

import numpy as np
import pytest
import yaml
from conftest import ROOT, run_stage
from gensim.models import KeyedVectors
from gensim.test.utils import datapath

from firth.embeddings.results import EmbeddingEval, EmbeddingTrain
from firth.io import sha256_file
from firth.results import load

METHODS = ["sgns", "subword", "ppmi-svd", "glove", "gensim"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("emb")
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["embeddings"]["seeds"]["sgns"] = [13, 14]  # (the tiny profile trains one)
    params["embeddings"]["seeds"]["ppmi-svd"] = [13, 14]
    # a grid of two trainings (SGNS) or SVDs (PPMI) with post-hoc variants
    params["embeddings"]["tune"].update(negatives=[5, 10], eig=[0.5, 1.0])
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    text = root / "data" / "subsampled" / "text"
    text.mkdir(parents=True)
    lines = open(datapath("lee_background.cor"), encoding="utf-8").read().lower()
    (text / "train.txt").write_text(lines)
    for name, fmt, src, dst in (
        ("analogy-google", "analogy", "questions-words.txt", "questions-words.txt"),
        ("wordsim353", "similarity", "wordsim353.tsv", "pairs.tsv"),
    ):
        folder = root / "data" / "raw" / "eval" / name
        folder.mkdir(parents=True)
        shutil.copy(datapath(src), folder / dst)
        record = {"format": fmt, "name": name, "kind": "package", "license": "test"}
        record["files"] = {dst: sha256_file(folder / dst)}  # as a fetch records
        (folder / "SOURCE.json").write_text(json.dumps(record))
    for m in METHODS:
        for seed in params["embeddings"]["seeds"][m]:  # sgns: 13, 14
            run_stage(root, f"train-embeddings-{m}@{seed}")
        run_stage(root, f"evaluate-embeddings@{m}")
    return root


@pytest.mark.parametrize("method", METHODS)
def test_stage_outputs(project, method):
    folder = project / "data" / "embeddings" / method / "seed-13"
    kv = KeyedVectors.load_word2vec_format(str(folder / "vectors.txt"))
    assert kv.vector_size == 16 and len(kv) > 1000
    assert np.isfinite(kv.vectors).all()
    rep = project / "reports/embeddings" / method
    train = load(rep / "seed-13" / "train.json", EmbeddingTrain)
    assert train.method == method and train.seed == 13
    assert train.words_per_second > 0 and train.peak_rss_mb > 0
    ev = load(rep / "eval.json", EmbeddingEval).runs["13"]
    top = ev.analogy_at("top")
    for key in ("cos_add", "cos_add_incl", "cos_mul", "only_b", "coverage"):
        assert 0 <= getattr(top, key) <= 1
    assert -1 <= ev.similarity["wordsim353"].spearman <= 1
    assert 0 < ev.similarity["wordsim353"].coverage <= 1
    detail = json.loads(
        (project / "reports/embeddings" / method / "eval_detail.json").read_text()
    )
    assert detail["neighbours"][0]["word"] == "king"
    sections = project / "reports/embeddings" / method / "analogy_sections.csv"
    assert "capital-common-countries" in sections.read_text()


@pytest.mark.parametrize("method", METHODS)
def test_a_run_records_exactly_the_params_its_stage_declares(project, method):
    """config.json holds `common` and the method's own sections, the params
    dvc.yaml declares for its stage: a setting of another method (glove's epochs
    for SGNS) would make the output differ between runs that DVC calls equal."""
    from firth.embeddings.methods import READS

    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    declared = spec[f"train-embeddings-{method}"]["do"]["params"]
    sections = {p.removeprefix("embeddings.") for p in declared}
    assert sections == {"common", *READS[method]}
    folder = project / "data" / "embeddings" / method / "seed-13"
    recorded = json.loads((folder / "config.json").read_text())["embeddings"]
    assert set(recorded) == sections


@pytest.mark.parametrize("method", ["sgns", "ppmi-svd"])
def test_tuned_methods_choose_on_the_dev_half(project, method):
    """Every setting of the grid is scored on the dev half, the best kept; the
    evaluation's similarity is the test half, the dev half reported apart."""
    from firth.embeddings.results import EmbeddingItems
    from firth.embeddings.similarity import evaluate_pairs, read_pairs
    from firth.embeddings.tuning import DEV, half, halves
    from firth.embeddings.vectors import load_word2vec
    from firth.results import load_items

    size = {"sgns": 2 * 2, "ppmi-svd": 2 * 2 * 2}[method]
    pairs = read_pairs(project / "data/raw/eval/wordsim353/pairs.tsv")
    dev = halves(pairs)[DEV]
    assert 0.3 < len(dev) / len(pairs) < 0.7
    for seed in (13, 14):
        t = load(
            project / f"reports/embeddings/{method}/seed-{seed}/train.json",
            EmbeddingTrain,
        )
        # trainings (SGNS runs, PPMI SVDs): one per (negatives, cds)
        assert len(t.tuning) == size and t.trainings == 2
        chosen = [row for row in t.tuning if row.chosen]
        assert len(chosen) == 1 and chosen[0].setting == t.setting
        assert chosen[0].dev_mean == max(row.dev_mean for row in t.tuning)
        vecs = load_word2vec(
            project / f"data/embeddings/{method}/seed-{seed}/vectors.txt"
        )
        rho = evaluate_pairs(vecs, dev)["spearman"]
        assert rho == pytest.approx(chosen[0].dev_spearman["wordsim353"], abs=2e-3)
    items = load_items(
        project / f"reports/embeddings/{method}/items.json.gz", EmbeddingItems
    )
    sim = items.similarity["wordsim353"]
    assert sim.test == [int(half(a, b) == "test") for a, b, _ in pairs]
    assert set(sim.cosine) == {"13", "14"}
    ev = load(project / f"reports/embeddings/{method}/eval.json", EmbeddingEval)
    covered = sum(
        c is not None and t for c, t in zip(sim.cosine["13"], sim.test, strict=True)
    )
    test_pairs = sum(sim.test)
    assert ev.runs["13"].similarity["wordsim353"].coverage == pytest.approx(
        covered / test_pairs, abs=1e-6
    )
    assert "wordsim353" in ev.runs["13"].similarity_dev


def test_ppmi_seeds_are_replicates_once_it_subsamples(project):
    """PPMI-SVD subsamples with its seed, as SGNS does, so its seeds differ."""
    a, b = (
        (project / f"data/embeddings/ppmi-svd/seed-{s}/vectors.txt").read_bytes()
        for s in (13, 14)
    )
    assert a != b


def test_seeds_are_summarised_with_every_run(project):
    ev = load(project / "reports/embeddings/sgns/eval.json", EmbeddingEval)
    assert ev.seeds == [13, 14] and set(ev.runs) == {"13", "14"}
    a, b = (ev.runs[s].similarity["wordsim353"].spearman for s in ("13", "14"))
    assert a != b  # another seed, other vectors
    spread = ev.summary.similarity["wordsim353"].spearman
    assert spread.mean == pytest.approx((a + b) / 2, abs=1e-6)
    assert spread.sd == pytest.approx(abs(a - b) / 2**0.5, abs=1e-6)
    assert spread.n == 2
    one = load(project / "reports/embeddings/glove/eval.json", EmbeddingEval)
    assert one.seeds == [13]
    assert one.summary.similarity["wordsim353"].spearman.sd == 0.0


def test_subword_model_gives_unseen_words_vectors(project):
    ev = load(project / "reports/embeddings/subword/eval.json", EmbeddingEval)
    s = ev.summary
    assert (
        s.similarity_with_oov["wordsim353"].coverage.mean
        > s.similarity["wordsim353"].coverage.mean
    )
    detail = json.loads(
        (project / "reports/embeddings/subword/eval_detail.json").read_text()
    )
    unseen = [e for e in detail["oov_neighbours"] if not e["in_vocab"]]
    assert unseen and all(e["neighbours"] for e in unseen)


def test_seed_reproduces_the_vectors(project, tmp_path):
    shutil.copytree(project, tmp_path / "again")
    run_stage(tmp_path / "again", "train-embeddings-sgns@14")
    a = (project / "data/embeddings/sgns/seed-14/vectors.txt").read_bytes()
    b = (tmp_path / "again/data/embeddings/sgns/seed-14/vectors.txt").read_bytes()
    assert a == b


def test_report_has_the_embeddings_section(project):
    run_stage(project, "report")
    md = (project / "reports" / "index.md").read_text()
    assert "## Word embeddings" in md and "3CosAdd by analogy section" in md


def test_missing_corpus_is_a_clear_error(tmp_path, capsys):
    shutil.copy(ROOT / "profiles" / "tiny.yaml", tmp_path / "params.yaml")
    with pytest.raises(SystemExit) as exc:
        run_stage(tmp_path, "train-embeddings-sgns@13")
    assert exc.value.code == 2
    assert "train.txt: not found" in capsys.readouterr().err


def test_unknown_params_key_is_named(tmp_path, capsys):
    params = yaml.safe_load((ROOT / "profiles" / "tiny.yaml").read_text())
    params["embeddings"]["sgns"]["learning_rate"] = 0.1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit):
        run_stage(tmp_path, "train-embeddings-sgns@13")
    err = capsys.readouterr().err
    assert "embeddings.sgns.learning_rate" in err
    del params["embeddings"]["sgns"]["learning_rate"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(SystemExit):
        run_stage(tmp_path, "train-embeddings-sgns@13", args=["sgns", "99"])
    assert "key 'embeddings.seeds.sgns' has no seed 99" in capsys.readouterr().err


def test_a_changed_evaluation_set_is_refused(project, tmp_path, capsys):
    """evaluate-embeddings checks each set against the sha256 its fetch recorded:
    a gold score edited after the fetch stops the stage (exit 2, one line naming
    the file), it is never scored against."""
    root = tmp_path / "edited"
    shutil.copytree(project, root, ignore=shutil.ignore_patterns("reports"))
    pairs = root / "data/raw/eval/wordsim353/pairs.tsv"
    lines = pairs.read_text().splitlines()
    word1, word2, gold = lines[5].split("\t")[:3]
    lines[5] = "\t".join([word1, word2, "9.99"])
    pairs.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exc:
        run_stage(root, "evaluate-embeddings@sgns")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "wordsim353/pairs.tsv: has sha256" in err and "fetch it again" in err
    assert not (root / "reports/embeddings/sgns/eval.json").exists()


def test_killed_stage_resumes_from_its_checkpoint(project, tmp_path, monkeypatch):
    import firth.checkpoint

    root = tmp_path / "kill"
    shutil.copytree(project, root)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["embeddings"]["common"]["epochs"] = 2
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(root, "train-embeddings-sgns@13")  # uninterrupted
    out = root / "data/embeddings/sgns/seed-13"
    clean = (out / "vectors.txt").read_bytes()
    shutil.rmtree(out)

    real_save = firth.checkpoint.Checkpoint.save

    def save_then_die(self, state):
        real_save(self, state)
        raise KeyboardInterrupt  # as if killed right after epoch 1

    ckpt = root / "data/checkpoints/embeddings/sgns-seed13-k5-cds0.75.pt"
    monkeypatch.setattr(firth.checkpoint.Checkpoint, "save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_stage(root, "train-embeddings-sgns@13")
    assert not out.exists()  # nothing half-written
    assert ckpt.exists()
    monkeypatch.setattr(firth.checkpoint.Checkpoint, "save", real_save)
    run_stage(root, "train-embeddings-sgns@13")
    assert (out / "vectors.txt").read_bytes() == clean
    assert not ckpt.exists()
