"""Every plot dvc.yaml declares names columns its CSV file has: `dvc plots show`
on a curve whose x column was renamed draws nothing and says nothing (the NMT
curves plotted `train_minutes` for weeks after the file had only
`train_seconds`). Checked on both profiles' committed plot files, with the stages
as DVC itself resolves them (foreach and matrix expanded)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import ROOT

PROFILES = [ROOT, ROOT / "profiles" / "full"]


def declared_plots(project: Path) -> list[tuple[str, Path, dict]]:
    """(stage, CSV path, plot properties) of every plot output of ``project``."""
    from dvc.repo import Repo

    out = []
    with Repo(str(project)) as repo:
        for stage in repo.index.stages:
            for o in stage.outs:
                if o.plot:
                    props = o.plot if isinstance(o.plot, dict) else {}
                    out.append((stage.addressing, Path(o.fs_path), props))
    return out


def header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return next(csv.reader(f))


def plot_problems(project: Path) -> tuple[int, list[str]]:
    """How many declared plot files exist, and every axis naming a column its file
    lacks."""
    checked, wrong = 0, []
    for stage, path, props in declared_plots(project):
        if not path.exists():  # a run the committed reports do not hold
            continue
        columns = header(path)
        checked += 1
        for axis in ("x", "y"):
            if axis in props and props[axis] not in columns:
                wrong.append(f"{stage}: {axis}={props[axis]} not in {path} {columns}")
    return checked, wrong


@pytest.mark.parametrize("project", PROFILES, ids=lambda p: p.name)
def test_every_plot_names_columns_its_csv_has(project):
    assert len(declared_plots(project)) >= 20  # every trainer's curves and more
    checked, wrong = plot_problems(project)
    assert checked >= 20
    assert not wrong, "\n".join(wrong)


def test_a_renamed_column_is_caught(tmp_path):
    import subprocess
    import sys

    dvc = Path(sys.executable).with_name("dvc")
    subprocess.run([str(dvc), "init", "--no-scm", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  train:\n    cmd: python train.py\n    plots:\n"
        "      - curve.csv:\n          cache: false\n"
        "          x: train_minutes\n          y: valid_bleu\n"
    )
    (tmp_path / "curve.csv").write_text("step,train_seconds,valid_bleu\n1,2.0,3.0\n")
    checked, wrong = plot_problems(tmp_path)
    assert checked == 1
    assert len(wrong) == 1 and "x=train_minutes" in wrong[0]
