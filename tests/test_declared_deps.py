"""Every third-party module Firth's code imports is a declared dependency: what
src/, stages/ and flows/ import is in pyproject's [project] dependencies (a package
that only arrives through another, as fastapi came through Prefect, can vanish
with that package's next release); what tests/ and benchmarks/ import may also be
in the dev or peers extras; and nothing in the runtime list is imported by tests and
benchmarks alone."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIRS = ("src", "stages", "flows")
DEV_DIRS = ("tests", "benchmarks")
# declared for what they do, not imported by name: DVC's C YAML loader (speed) and
# the per-version Bible texts that pythonbible loads by name
NOT_IMPORTED = {"ruamel-yaml-clib"} | {
    f"pythonbible-{v}" for v in ("kjv", "asv", "web", "ylt", "dar", "bbe")
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(reqs: list[str]) -> set[str]:
    return {_norm(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in reqs}


def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _requirement_names(project["dependencies"])
    extras = project["optional-dependencies"]
    dev = _requirement_names(extras["dev"]) | _requirement_names(extras["peers"])
    return runtime, dev


def _imported_modules(folder: Path) -> dict[str, set[str]]:
    """Top-level module -> files importing it (absolute imports only), leaving out
    the standard library and the folder's own modules and packages."""
    local = {"firth", "stages", "flows", "benchmarks", "tests"}
    for d in (*RUNTIME_DIRS, *DEV_DIRS):  # tests put flows/ and benchmarks/ on the path
        local |= {p.stem for p in (ROOT / d).rglob("*.py")}
        local |= {p.name for p in (ROOT / d).rglob("*") if p.is_dir()}
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local:
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _distributions(dirs: tuple[str, ...]) -> dict[str, set[str]]:
    """Distribution (normalised name) -> files that import one of its modules; a
    module no installed distribution provides maps to itself (and then fails)."""
    provides = packages_distributions()
    out: dict[str, set[str]] = {}
    for d in dirs:
        for module, files in _imported_modules(ROOT / d).items():
            for dist in provides.get(module, [module]):
                out.setdefault(_norm(dist), set()).update(files)
    return out


def test_runtime_code_imports_only_declared_dependencies():
    runtime, _ = _declared()
    used = _distributions(RUNTIME_DIRS)
    assert {"torch", "dvc", "prefect", "typer"} <= used.keys()  # the scan sees them
    missing = {d: sorted(f)[:3] for d, f in used.items() if d not in runtime}
    assert not missing, f"imported but not in [project] dependencies: {missing}"


# scripts benchmarks/peers.py runs with a peer's own venv (built with pinned
# versions: FLAIR in peers.py), and what they may import beyond the declared
OWN_VENV = {"benchmarks/peers_flair.py": {"flair"}}


def test_tests_and_benchmarks_import_only_declared_dependencies():
    runtime, dev = _declared()
    used = _distributions(DEV_DIRS)
    assert "pytest" in used
    for dist in {d for allowed in OWN_VENV.values() for d in allowed}:
        used[dist] = {f for f in used.get(dist, ()) if dist not in OWN_VENV.get(f, ())}
        if not used[dist]:
            del used[dist]
    missing = {d: sorted(f)[:3] for d, f in used.items() if d not in runtime | dev}
    assert not missing, f"imported but declared nowhere: {missing}"


def test_every_runtime_dependency_is_used_at_runtime():
    runtime, _ = _declared()
    used = _distributions(RUNTIME_DIRS).keys() | NOT_IMPORTED
    unused = sorted(runtime - used)
    assert not unused, f"runtime dependencies no runtime module imports: {unused}"
