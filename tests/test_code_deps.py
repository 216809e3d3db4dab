"""The DAG's code deps are the truth, and every module stands on its own.

- each stage's code deps in dvc.yaml (and in every profile project's dvc.yaml) are
  exactly the import closure of its command's script (firth.code_deps);
- every module of the library and every stage imports in a fresh interpreter (no
  import cycle hides behind an import order that happens to work);
- no module of the library or a stage imports another module's private name.
"""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

from firth.code_deps import (
    closure,
    imported_modules,
    mismatches,
    prefix_of,
    profile_projects,
)

PROFILES = profile_projects(ROOT)


def _stages(project: Path):
    from dvc.repo import Repo

    with Repo(str(project)) as repo:
        return [
            (s.addressing, s.cmd, [d.def_path for d in s.deps])
            for s in repo.index.stages
        ]


def test_dvc_yaml_code_deps_equal_the_import_closure():
    problems = mismatches(ROOT, _stages(ROOT))
    assert not problems, "dvc.yaml code deps are not the import closure:\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize("project", PROFILES, ids=lambda p: p.name)
def test_profile_projects_code_deps_equal_the_import_closure(project):
    prefix = prefix_of(ROOT, project)
    stages = _stages(project)
    assert stages, f"{project}: no stage"
    problems = mismatches(ROOT, stages, prefix=prefix)
    assert not problems, f"{project}/dvc.yaml:\n" + "\n".join(problems)


def test_closure_follows_relative_function_level_and_package_imports(tmp_path):
    """An oracle on a planted tree: the closure holds exactly what runs."""
    files = {
        "stages/s.py": "import os\nfrom firth import a\n",
        "src/firth/__init__.py": "",
        "src/firth/a.py": "def f():\n    from firth.pkg.b import g\n    return g\n",
        "src/firth/pkg/__init__.py": "from .c import X\n",
        "src/firth/pkg/b.py": "import numpy\n",
        "src/firth/pkg/c.py": "X = 1\n",
        "src/firth/unused.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert closure(tmp_path, "stages/s.py") == sorted(
        set(files) - {"src/firth/unused.py"}
    )
    assert imported_modules(
        "from ..x import y\nfrom . import z", module="firth.pkg.b", is_package=False
    ) == {"firth.x", "firth.x.y", "firth.pkg", "firth.pkg.z"}
    # a stale dep and a missing one are both reported, by name
    problems = mismatches(
        tmp_path,
        [("s", "python stages/s.py", ["stages/s.py", "src/firth/unused.py"])],
    )
    [line] = problems
    assert "missing src/firth/__init__.py" in line and "src/firth/pkg/c.py" in line
    assert "not imported src/firth/unused.py" in line


def _modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        parts = path.relative_to(ROOT / "src").with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    names += [f"stages.{p.stem}" for p in sorted((ROOT / "stages").glob("[a-z]*.py"))]
    return names


# A fresh interpreter per module would cost a torch import each (~100 modules); the
# parent imports only third-party libraries, never firth or stages, and forks one
# child per module (one per core at a time), so each child starts with none of the
# project's modules loaded.
_FORKED_IMPORTS = textwrap.dedent(
    """
    import importlib, os, sys, traceback
    sys.path.insert(0, {root!r})
    for heavy in ("torch", "numpy", "scipy.sparse", "pandas", "matplotlib.pyplot",
                  "pydantic", "yaml", "tokenizers", "sacrebleu", "tqdm"):
        importlib.import_module(heavy)
    assert not any(m.split(".")[0] in ("firth", "stages") for m in sys.modules)
    failed, running = 0, 0
    for name in sys.argv[1:]:
        if running == os.cpu_count():  # one child per core at a time
            _, status = os.wait()
            failed, running = failed + (status != 0), running - 1
        pid = os.fork()
        if pid == 0:
            try:
                importlib.import_module(name)
            except BaseException:
                print(f"{{name}}:", traceback.format_exc(limit=3), flush=True)
                os._exit(1)
            os._exit(0)
        running += 1
    for _ in range(running):
        _, status = os.wait()
        failed += status != 0
    sys.exit(1 if failed else 0)
    """
)


def test_every_module_imports_on_its_own():
    modules = _modules()
    assert "firth.nmt.config" in modules and "stages.train_lm" in modules
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_IMPORTS.format(root=str(ROOT)), *modules],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "stages").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "firth"
            ):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    offenders.append(f"{path.relative_to(ROOT)}: {private}")
    assert not offenders, offenders


@pytest.mark.parametrize("project", PROFILES, ids=lambda p: p.name)
def test_profile_projects_are_generated_from_the_root_dvc_yaml(project):
    """A profile project runs the same DAG: its dvc.yaml is the root one with the
    code reached through ../../ (`firth deps --write` regenerates it)."""
    from firth.code_deps import for_project

    root_text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    want = for_project(root_text, prefix=prefix_of(ROOT, project))
    assert (project / "dvc.yaml").read_text(encoding="utf-8") == want, (
        f"{project}/dvc.yaml is stale: run `firth deps --write`"
    )
    assert (project / ".dvc" / "config").exists()  # its own DVC project
    assert (project / "params.yaml").exists()


def test_for_project_prefixes_code_only():
    from firth.code_deps import for_project

    text = (
        "stages:\n  s:\n    cmd: python stages/r.py --benchmarks benchmarks/results\n"
        "    deps:\n      - src/firth/a.py\n      - data/x\n"
        "      - benchmarks/results\n"
        "    outs:\n      - reports/index.md\n"
    )
    out = for_project(text, prefix="../../")
    assert "cmd: python ../../stages/r.py --benchmarks ../../benchmarks/results" in out
    assert (
        "- ../../src/firth/a.py\n      - data/x\n      - ../../benchmarks/results"
        in out
    )
    assert "      - reports/index.md\n" in out
