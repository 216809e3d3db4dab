"""The DAG's code deps are the truth, and every module stands on its own.

- each stage's code in dvc.yaml (and in every profile project's dvc.yaml) is the
  manifest of its command's script, and each manifest stage depends on exactly that
  script's import closure (firth.code_deps); with DVC, a change reruns exactly the
  stages whose script imports the changed file;
- every module of the library, every stage, flow and benchmark imports in a fresh
  interpreter (no import cycle hides behind an import order that happens to work);
- none of them imports another module's private name.
"""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
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
    (tmp_path / "stages/code_manifest.py").write_text("import json\n")
    manifest = "python stages/code_manifest.py stages/s.py manifests/s.json"
    problems = mismatches(
        tmp_path,
        [
            ("code-s", manifest, ["stages/s.py", "src/firth/unused.py"]),
            ("s", "python stages/s.py", ["manifests/s.json", "data/x"]),
        ],
    )
    [line] = problems
    assert line.startswith("code-s: ")
    assert "missing src/firth/__init__.py" in line and "src/firth/pkg/c.py" in line
    assert "stages/code_manifest.py" in line  # the manifest script's own code
    assert "not imported src/firth/unused.py" in line
    # a stage listing code itself, or lacking its manifest, is reported too
    problems = mismatches(
        tmp_path,
        [("s", "python stages/s.py", ["src/firth/a.py", "data/x"])],
    )
    [line] = problems
    assert "code deps src/firth/a.py (depend on manifests/s.json instead)" in line
    assert "missing manifests/s.json" in line and "no stage code-s" in line


# flows/ and benchmarks/ are folders of scripts, not packages: each imports its
# siblings by name (its folder is on sys.path however it runs); "folder:module"
SCRIPT_FOLDERS = ("flows", "benchmarks")


def _modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        parts = path.relative_to(ROOT / "src").with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    names += [f"stages.{p.stem}" for p in sorted((ROOT / "stages").glob("[a-z]*.py"))]
    for folder in SCRIPT_FOLDERS:
        names += [f"{folder}:{p.stem}" for p in sorted((ROOT / folder).glob("*.py"))]
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
                  "pydantic", "yaml", "tokenizers", "sacrebleu", "tqdm", "prefect"):
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
                folder, _, module = name.rpartition(":")
                if folder:  # a script folder's module, its folder on sys.path
                    sys.path.insert(0, os.path.join({root!r}, folder))
                importlib.import_module(module)
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
    assert "flows:retrain" in modules and "benchmarks:nmt" in modules
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_IMPORTS.format(root=str(ROOT)), *modules],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_module_imports_another_modules_private_names():
    """Neither the library, a stage, a flow nor a benchmark imports a private name
    from the project (firth, stages, or a sibling script)."""
    siblings = {p.stem for f in SCRIPT_FOLDERS for p in (ROOT / f).glob("*.py")}
    project = {"firth", "stages", *siblings}
    paths = [*(ROOT / "src").rglob("*.py"), *(ROOT / "stages").glob("*.py")]
    paths += [p for f in SCRIPT_FOLDERS for p in (ROOT / f).glob("*.py")]
    offenders = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (
                (node.module or "").split(".")[0] in project
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


def _run(cwd, env, *cmd) -> str:
    """``cmd``'s stdout; its output in full when it fails."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_code_change_reruns_exactly_the_stages_whose_script_imports_it(tmp_path):
    """Real DVC on a planted project: two scripts share a module and one imports a
    module of its own. Editing that module reruns its manifest and its stage only;
    editing the shared one reruns both; editing the manifest script reruns every
    manifest, whose output does not change, and so no stage below them."""
    import os
    import shutil

    from firth.code_deps import rewrite

    files = {
        "src/firth/__init__.py": "",
        "src/firth/shared.py": "X = 1\n",
        "src/firth/only_a.py": "Y = 2\n",
        # (the imports are read, not run: the manifest script runs the real firth)
        "stages/a.py": "def f():\n    from firth import only_a, shared\n"
        "open('a.txt', 'w')\n",
        "stages/b.py": "def f():\n    from firth import shared\nopen('b.txt', 'w')\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shutil.copy(ROOT / "stages" / "code_manifest.py", tmp_path / "stages")
    dvc_yaml = (
        "stages:\n"
        "  a:\n    cmd: python stages/a.py\n    deps:\n      - stages/a.py\n"
        "    outs:\n      - a.txt\n"
        "  b:\n    cmd: python stages/b.py\n    deps:\n      - stages/b.py\n"
        "    outs:\n      - b.txt\n"
    )
    (tmp_path / "dvc.yaml").write_text(rewrite(dvc_yaml, tmp_path))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"

    def sh(*cmd):
        return _run(tmp_path, env, *cmd)

    def repro():
        import re

        return set(re.findall(r"Running stage '([^']+)'", sh("dvc", "repro")))

    sh("git", "init", "-q")
    sh("dvc", "init", "-q")
    assert repro() == {"a", "b", "code-a", "code-b"}
    assert repro() == set()  # a no-op
    (tmp_path / "src/firth/only_a.py").write_text("Y = 3\n")
    assert repro() == {"code-a", "a"}
    (tmp_path / "src/firth/shared.py").write_text("X = 2\n")
    assert repro() == {"code-a", "a", "code-b", "b"}
    script = tmp_path / "stages/code_manifest.py"
    script.write_text(script.read_text() + "# a comment\n")
    assert repro() == {"code-a", "code-b"}
    assert not mismatches(
        tmp_path,
        [
            (s, e["cmd"], e["deps"])
            for s, e in yaml.safe_load((tmp_path / "dvc.yaml").read_text())[
                "stages"
            ].items()
        ],
    )


def test_a_folder_dep_ignores_the_gitignore_dvc_writes_in_it(tmp_path):
    """With the project's .dvcignore, DVC rewriting its .gitignore entries in another
    order (as it does after a failed run) leaves a stage that reads the folder up to
    date; it still keeps the outputs out of git."""
    import os
    import shutil

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"

    def sh(*cmd):
        return _run(tmp_path, env, *cmd)

    sh("git", "init", "-q")
    sh("dvc", "init", "-q")
    shutil.copy(ROOT / ".dvcignore", tmp_path / ".dvcignore")
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n"
        "  s1:\n    cmd: mkdir -p out/s1 && echo 1 > out/s1/f\n    outs: [out/s1]\n"
        "  s2:\n    cmd: mkdir -p out/s2 && echo 2 > out/s2/f\n    outs: [out/s2]\n"
        "  both:\n    cmd: cat out/s1/f out/s2/f > both.txt\n    deps: [out]\n"
        "    outs: [both.txt]\n"
    )
    sh("dvc", "repro")
    entries = (tmp_path / "out/.gitignore").read_text().splitlines()
    assert sorted(entries) == ["/s1", "/s2"]
    (tmp_path / "out/.gitignore").write_text("\n".join(entries[::-1]) + "\n")
    assert "up to date" in sh("dvc", "status")
    assert sh("git", "check-ignore", "out/s1", "out/s2").split() == ["out/s1", "out/s2"]
