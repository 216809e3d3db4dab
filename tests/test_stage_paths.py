"""dvc.yaml is the one place paths are written: every stage's command passes each
path its script reads or writes, each of those is one of its deps or outs (or a
scratch folder outside DVC's outputs), every dep and out is passed, and, run, a
stage opens nothing under data/ or reports/ besides them.

The static checks read each profile's dvc.yaml through DVC's own index (templates
resolved against that profile's params). What a stage really opens is recorded by
an audit hook (``sys.addaudithook``, firth.stage_cli with ``FIRTH_OPEN_LOG``): the
end-to-end test records the tiny profile's `dvc repro` (tests/test_e2e.py) and the
NLI test its stages run in-process (tests/test_nli.py); both check with
``check_opened`` here."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

# outside DVC's outputs on purpose (dvc.yaml's header): downloads, checkpoints
SCRATCH = ("data/cache", "data/checkpoints")
WATCHED = ("data", "reports")


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _tmp_free(path: str) -> str:
    """``path`` with firth.io.atomic_path's temporary names undone:
    ``.<name>.<random>/<name>/...`` and ``.<name>.old`` are ``<name>``."""
    parts = path.split("/")
    out: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        m = re.fullmatch(r"\.(.+)\.[^.]+", part)
        if m and i > 0:
            out.append(m.group(1))
            if i + 1 < len(parts) and parts[i + 1] == m.group(1):
                i += 1
        else:
            out.append(part)
        i += 1
    return "/".join(out)


class Stage:
    """One resolved stage: its script, its path arguments, deps and outs
    (project-relative POSIX paths)."""

    def __init__(self, dvc_stage):
        words = shlex.split(dvc_stage.cmd)
        self.name = dvc_stage.name
        self.argv = words[1:]  # what the script sees as sys.argv
        self.passed = {
            flag[2:]: value
            for flag, value in zip(words, words[1:], strict=False)
            if flag.startswith("--") and flag != "--params"
        }
        self.deps = [d.def_path for d in dvc_stage.deps]
        self.outs = [o.def_path for o in dvc_stage.outs]

    def declared(self) -> list[str]:
        return [*self.deps, *self.outs]


def stages(project: Path) -> dict[str, Stage]:
    from dvc.repo import Repo

    with Repo(str(project), uninitialized=True) as repo:
        return {s.name: Stage(s) for s in repo.index.stages}


def passed_path_errors(stage: Stage) -> list[str]:
    """Each passed path that is not a dep, an out, a folder holding some of them
    (the report's reports/), or a scratch folder; each dep or out under data/ or
    reports/ that no passed path covers."""
    errors = []
    declared = stage.declared()
    for flag, value in stage.passed.items():
        if value.startswith("../"):  # the root's code or benchmarks, from a profile
            continue
        if not (
            value in declared
            or any(_under(d, value) for d in declared)
            or any(_under(value, s) for s in SCRATCH)
        ):
            errors.append(f"{stage.name}: --{flag} {value} is no dep or out")
    for path in declared:
        if path.split("/")[0] in WATCHED and not any(
            _under(path, v) for v in stage.passed.values()
        ):
            errors.append(f"{stage.name}: {path} is declared but never passed")
    return errors


def check_opened(project: Path, stage: Stage, opened) -> list[str]:
    """What ``stage`` opened (``opened``: (absolute path, "r" or "w")) under the
    project's data/ and reports/ that is not one of its deps or outs (written:
    not one of its outs) or a scratch folder."""
    errors = []
    root = project.resolve()
    for path, mode in sorted(opened):
        try:
            rel = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            continue  # code, params, site-packages, temporary files elsewhere
        rel = _tmp_free(rel)
        if rel.split("/")[0] not in WATCHED or any(_under(rel, s) for s in SCRATCH):
            continue
        allowed = stage.outs if mode == "w" else stage.declared()
        # an out's parent folder is opened to replace the out in it
        if any(_under(rel, d) for d in allowed) or any(
            _under(d, rel) for d in stage.outs
        ):
            continue
        errors.append(f"{stage.name}: opened {rel} ({mode}), not a dep or out")
    return errors


def read_open_log(log: Path, project: Path) -> dict[str, set]:
    """The stage_cli audit log grouped by stage (a process's argv is its
    stage's command)."""
    by_argv = {tuple(s.argv): name for name, s in stages(project).items()}
    out: dict[str, set] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        name = by_argv.get(tuple(row["argv"]))
        assert name is not None, f"a process no stage runs: {row['argv']}"
        out.setdefault(name, set()).add((row["path"], row["mode"]))
    return out


def _project(tmp_path: Path, params: Path) -> Path:
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    shutil.copy(params, tmp_path / "params.yaml")
    return tmp_path


@pytest.mark.parametrize("profile", ["default", "tiny", "full"])
def test_every_path_a_stage_passes_is_a_dep_or_an_out(profile, tmp_path):
    if profile == "full":
        project = ROOT / "profiles" / "full"
    else:
        params = ROOT / (
            "params.yaml" if profile == "default" else "profiles/tiny.yaml"
        )
        project = _project(tmp_path, params)
    if profile == "tiny":  # NLI enabled, so that its stages are checked too
        p = yaml.safe_load((project / "params.yaml").read_text())
        p["sources"]["nli"] = {"toy": {"kind": "local", "format": "nli", "path": "x"}}
        p["nli"]["data"] = ["toy"]
        (project / "params.yaml").write_text(yaml.safe_dump(p))
    found = stages(project)
    assert any(n.startswith("train-nmt@") for n in found)
    errors = [e for s in found.values() for e in passed_path_errors(s)]
    assert errors == []


def test_the_checks_catch_a_stray_path_and_an_undeclared_open(tmp_path):
    project = _project(tmp_path, ROOT / "profiles" / "tiny.yaml")
    found = stages(project)
    nmt = found["train-nmt@pointer"]
    nmt.passed["tokenizer"] = "data/tokenizers/text"  # not its dep
    assert passed_path_errors(nmt) == [
        "train-nmt@pointer: --tokenizer data/tokenizers/text is no dep or out",
        "train-nmt@pointer: data/tokenizers/parallel is declared but never passed",
    ]
    ev = found["evaluate-lm@lstm"]
    at = project.resolve()
    opened = {
        (str(at / "data/lm/lstm/model.pt"), "r"),  # a dep
        (
            str(at / "reports/lm/lstm/.eval.json.x1y2/eval.json"),
            "w",
        ),  # an out, atomically
        (str(at / "reports/lm"), "r"),  # the outs' folder
        (str(at / "data/checkpoints/lm/lstm.pt"), "r"),  # scratch
        (str(at / "params.yaml"), "r"),  # not watched
        (str(at / "data/subsampled/text/train.txt"), "r"),  # not a dep
        (str(at / "data/lm/lstm/model.pt"), "w"),  # a dep, written
    }
    assert check_opened(project, ev, opened) == [
        "evaluate-lm@lstm: opened data/lm/lstm/model.pt (w), not a dep or out",
        "evaluate-lm@lstm: opened data/subsampled/text/train.txt (r), not a dep or out",
    ]


def test_the_audit_hook_records_what_a_stage_opens(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "opened.jsonl"
    code = (
        "import sys; from firth import stage_cli\n"
        "def body(args): open(args.out, 'w').write('x'); open(args.params).read()\n"
        "p = stage_cli.parser('t'); stage_cli.path(p, 'out', 'o')\n"
        "stage_cli.run(body, p, None)\n"
    )
    (tmp_path / "params.yaml").write_text("a: 1\n")
    (tmp_path / "data").mkdir()
    subprocess.run(
        [sys.executable, "-c", code, "--out", "data/x.txt"],
        cwd=tmp_path,
        env={"FIRTH_OPEN_LOG": str(log), "PYTHONPATH": str(ROOT / "src")},
        check=True,
    )
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    seen = {(Path(r["path"]).name, r["mode"]) for r in rows if r["argv"][1:]}
    assert ("x.txt", "w") in seen and ("params.yaml", "r") in seen
