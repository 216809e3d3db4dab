"""Both profiles' committed scorecards are recomputed from their committed files
alone (no training, no data/): `firth scorecard --check` on a fresh clone's
reports, the item files stay small, and a changed item file is caught."""

import gzip
import json
import shutil

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from firth.cli import app

PROFILES = [".", "profiles/full"]


@pytest.mark.parametrize("project", PROFILES)
def test_committed_scorecard_is_what_the_committed_files_give(project):
    res = CliRunner().invoke(
        app, ["scorecard", "--repo", str(ROOT / project), "--check"]
    )
    assert res.exit_code == 0, res.output
    assert "known findings hold on this run" in res.output
    card = json.loads((ROOT / project / "reports" / "scorecard.json").read_text())
    assert len(card["findings"]) == 13
    # every model's partial-input test, wherever the items were committed
    tested = any(f["verdict"] != "not run" for f in card["findings"])
    assert bool(card["partial_input"]) == tested
    for f in card["findings"]:
        assert f["verdict"] in ("holds", "does not hold", "inconclusive", "not run")


def test_item_files_are_compact():
    """Every committed run's per-item statistics, both profiles, stay a few MB:
    4.8 MB with the full profile's six attention tests (2,592 verses each,
    about 345 kB apiece: sacreBLEU's statistics of four greedy decodings)."""
    sizes = [
        p.stat().st_size
        for project in PROFILES
        for p in (ROOT / project / "reports").glob("*/*/items.json.gz")
    ]
    assert sizes and sum(sizes) < 5_500_000, sum(sizes)


@pytest.mark.parametrize("project", PROFILES)
def test_report_pages_link_their_figures(project):
    """The committed pages stay small (each figure a file beside them, not base64
    inside them, so a rebuild commits only what changed) and every figure the
    Markdown summary lists is linked from the HTML page and exists."""
    import re

    reports = ROOT / project / "reports"
    page = (reports / "index.html").read_text(encoding="utf-8")
    assert len(page.encode()) < 200_000
    assert "data:" not in page
    linked = re.findall(r'<img alt="[^"]*" src="([^"]+)"', page)
    listed = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (reports / "index.md").read_text())
    assert len(linked) >= 10 and linked == listed
    assert all((reports / p).is_file() and p.startswith("figures/") for p in linked)


def test_a_changed_item_file_is_caught(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    shutil.copy(ROOT / "params.yaml", project / "params.yaml")
    shutil.copytree(ROOT / "reports", project / "reports")
    path = project / "reports" / "lm" / "kn5" / "items.json.gz"
    items = json.loads(gzip.decompress(path.read_bytes()))
    items["bits"] = [b * 0.5 for b in items["bits"]]  # Kneser-Ney twice as good
    path.write_bytes(gzip.compress(json.dumps(items).encode()))
    res = CliRunner().invoke(app, ["scorecard", "--repo", str(project), "--check"])
    assert res.exit_code == 1, res.output
    assert "lstm-kn" in res.output


def test_a_run_removed_from_params_is_not_evidence(tmp_path):
    """A run folder left behind after its run left params.yaml (its stage gone
    from dvc.yaml, its files still committed) neither joins a system's seeds nor
    breaks a finding: the committed scorecard still checks."""
    project = tmp_path / "p"
    project.mkdir()
    shutil.copy(ROOT / "params.yaml", project / "params.yaml")
    shutil.copytree(ROOT / "reports", project / "reports")
    nmt = project / "reports" / "nmt"
    # a stale second seed of the pointer whose test split differs
    shutil.copytree(nmt / "pointer", nmt / "pointer-seed99")
    ev = json.loads((nmt / "pointer-seed99" / "eval.json").read_text())
    ev["seed"] = 99
    (nmt / "pointer-seed99" / "eval.json").write_text(json.dumps(ev))
    path = nmt / "pointer-seed99" / "items.json.gz"
    items = json.loads(gzip.decompress(path.read_bytes()))
    items["test_sha256"] = "0" * 64
    path.write_bytes(gzip.compress(json.dumps(items).encode()))
    res = CliRunner().invoke(app, ["scorecard", "--repo", str(project), "--check"])
    assert res.exit_code == 0, res.output
