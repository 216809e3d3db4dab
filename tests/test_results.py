"""The typed result files: Spread against the statistics module, the seed-tree
walk, one-line errors for a file that is not its schema's, every committed
result file of the migrated tasks read through its schema, and compare's rules
from the schemas matching real metric keys."""

import fnmatch
import json
import math
import statistics

import pytest
from conftest import ROOT

from firth import compare
from firth.embeddings.results import EmbeddingDetail, EmbeddingEval, EmbeddingTrain
from firth.errors import DataError
from firth.lm.results import LmDetail, LmEval, LmTrain
from firth.nmt.results import NmtDetail, NmtEval, NmtTrain
from firth.results import Spread, load, spread_tree
from firth.tagging.results import TaggerEval, TaggerTrain

SCHEMAS = {
    "reports/embeddings/*/eval.json": EmbeddingEval,
    "reports/embeddings/*/eval_detail.json": EmbeddingDetail,
    "reports/embeddings/*/seed-*/train.json": EmbeddingTrain,
    "reports/lm/*/eval.json": LmEval,
    "reports/lm/*/eval_detail.json": LmDetail,
    "reports/lm/*/train.json": LmTrain,
    "reports/nmt/*/eval.json": NmtEval,
    "reports/nmt/*/eval_detail.json": NmtDetail,
    "reports/nmt/*/train.json": NmtTrain,
    "reports/tagging/*/eval.json": TaggerEval,
    "reports/tagging/*/seed-*/train.json": TaggerTrain,
}


def test_spread_against_the_statistics_module():
    xs = [0.25, 0.5, 0.125, 1.0]
    s = Spread.of(xs)
    assert s.mean == statistics.fmean(xs) and s.sd == statistics.stdev(xs)
    assert (s.min, s.max, s.n) == (0.125, 1.0, 4)
    one = Spread.of([0.3])
    assert (one.mean, one.sd, one.n) == (0.3, 0.0, 1)
    for missing in ([0.3, None], [0.3, math.nan]):  # a seed without a value
        m = Spread.of(missing)
        assert (m.mean, m.sd, m.n) == (None, None, 2)


def test_spread_tree_walks_seeds_in_parallel():
    a = {"x": 1.0, "sub": {"y": 2.0, "name": "k"}, "only_a": 5.0}
    b = {"x": 3.0, "sub": {"y": 4.0, "name": "k"}}
    tree = spread_tree([a, b])
    assert tree["x"]["mean"] == 2.0 and tree["sub"]["y"]["sd"] == pytest.approx(2**0.5)
    assert tree["sub"]["name"] == "k" and "only_a" not in tree
    with pytest.raises(ValueError, match="differ across seeds"):
        spread_tree([{"name": "a"}, {"name": "b"}])


def test_a_file_that_is_not_its_schemas_is_one_clear_error(tmp_path):
    good = json.loads((ROOT / "reports/lm/kn5/eval.json").read_text())
    bad = {**good, "test": {**good["test"], "perplexity": "low"}}
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(DataError) as err:
        load(path, LmEval)
    msg = str(err.value)
    assert str(path) in msg and "test.perplexity" in msg and "\n" not in msg
    path.write_text(json.dumps({**good, "surprise": 1}))
    with pytest.raises(DataError, match="'surprise'"):
        load(path, LmEval)


@pytest.mark.parametrize("pattern", list(SCHEMAS))
def test_every_committed_result_file_reads_through_its_schema(pattern):
    paths = sorted(ROOT.glob(pattern))
    assert paths, pattern
    for path in paths:
        load(path, SCHEMAS[pattern])


def test_every_schema_rule_judges_a_committed_metric():
    """A renamed field cannot orphan its compare rule silently."""
    metrics = compare.load_folder(ROOT / "reports", compare.declared_metrics(ROOT))
    keys = [(path, key) for path, values in metrics.items() for key in values]
    for rule in compare.DEFAULT_RULES:
        glob = rule.pattern.partition(":")[0]
        committed = any(fnmatch.fnmatchcase(p, glob) for p, _ in keys)
        if rule.why.startswith("firth.") and committed:  # NLI is not in the default
            assert any(rule.matches(p, k) for p, k in keys), rule.pattern


def test_a_draft_checks_each_value_as_it_is_set():
    """A trainer's record is typed from the start (firth.results.Draft): an unknown
    key or a wrong type fails when it is set, before any training; a missing
    field fails at build; a complete draft builds the record parse would."""
    from firth.errors import DataError
    from firth.results import Draft, Hardware

    draft = Draft(Hardware, "train-x stats", device="cpu", precision="fp32")
    with pytest.raises(DataError, match="a Hardware has no field 'devices'"):
        draft.set(devices=2)
    with pytest.raises(DataError, match="Hardware.threads: .*integer"):
        draft.set(threads="two")
    with pytest.raises(DataError, match="key 'compile'"):
        draft.build()
    draft.set(compile=False, threads=2)
    assert draft.build() == Hardware(
        device="cpu", precision="fp32", compile=False, threads=2
    )
    assert draft["threads"] == 2
