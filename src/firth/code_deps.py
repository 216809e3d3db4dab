"""The code a DVC stage runs: the import closure of its command's script.

A stage's code deps in ``dvc.yaml`` must be exactly the files its script imports,
directly or not, from the project (``stages/`` and ``src/firth/``): a missing file
lets the cache say "up to date" after the code changed; an extra one reruns the stage
for nothing. The closure is read from the source (every ``import`` statement,
function-level ones included, since they run when the function does), resolved
against the project's own packages; third-party imports are ignored. Importing a
module runs its package's ``__init__.py`` files too, so those are part of it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from firth.errors import FirthError

# Top-level packages of the project, and where their sources live (repo-relative).
PACKAGES = {"firth": "src/firth", "stages": "stages"}
_SCRIPT = re.compile(r"\bpython3?\s+(?:-m\s+)?(\S+\.py)\b")


def _module_path(root: Path, module: str) -> Path | None:
    """The repo-relative file of a project module, or None when it is not one."""
    top, *rest = module.split(".")
    if top not in PACKAGES:
        return None
    base = Path(PACKAGES[top], *rest)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if (root / candidate).is_file():
            return candidate
    return None


def _packages_of(root: Path, module: str) -> list[Path]:
    """The ``__init__.py`` of each package that importing ``module`` runs."""
    parts = module.split(".")
    found = []
    for i in range(1, len(parts)):
        init = _module_path(root, ".".join(parts[:i]))
        if init is not None and init.name == "__init__.py":
            found.append(init)
    return found


def _module_name(path: Path) -> str:
    """``src/firth/lm/train.py`` -> ``firth.lm.train`` (a package: its name)."""
    for top, folder in PACKAGES.items():
        try:
            rel = path.relative_to(folder)
        except ValueError:
            continue
        parts = [top, *rel.with_suffix("").parts]
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return path.stem  # a script outside the packages


def imported_modules(source: str, *, module: str, is_package: bool) -> set[str]:
    """Every module named by an import statement of ``source`` (absolute names).

    ``from a.b import c`` yields ``a.b`` and ``a.b.c`` (``c`` may be a submodule);
    relative imports are resolved against ``module``.
    """
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def closure(root: Path, script: str | Path) -> list[str]:
    """The repo-relative files that running ``script`` imports from the project,
    the script included, sorted."""
    root = Path(root)
    start = Path(script)
    if not (root / start).is_file():
        raise FirthError(f"{start}: script not found under {root}")
    seen: set[Path] = set()
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        name = _module_name(path)
        source = (root / path).read_text(encoding="utf-8")
        for module in imported_modules(
            source, module=name, is_package=path.name == "__init__.py"
        ):
            found = _module_path(root, module)
            if found is not None:
                todo.append(found)
                todo.extend(_packages_of(root, module))
    return sorted(p.as_posix() for p in seen)


def script_of(cmd: str) -> str:
    """The ``*.py`` script a stage's command runs."""
    match = _SCRIPT.search(cmd)
    if match is None:
        raise FirthError(f"no 'python <script>.py' in the command {cmd!r}")
    return match.group(1)


def is_code(path: str) -> bool:
    """A dep that is project code (as opposed to data or reports)."""
    return any(
        path == folder or path.startswith(f"{folder}/") for folder in PACKAGES.values()
    )


def _code_path(path: str, prefix: str) -> str | None:
    """The repo-relative path of a dep written from a project ``prefix`` below the
    root, when it is project code; None for data, reports and other paths."""
    if not path.startswith(prefix):
        return None
    rel = path[len(prefix) :]
    return rel if is_code(rel) else None


def mismatches(
    root: Path, stages: Iterable[tuple[str, str, Iterable[str]]], *, prefix: str = ""
) -> list[str]:
    """One line per stage whose code deps differ from its script's closure.

    ``stages`` yields (name, cmd, deps) with paths relative to the stage's working
    directory; ``prefix`` is the path from there to ``root`` (``../../`` for a
    profile project two folders down).
    """
    problems = []
    cache: dict[str, list[str]] = {}
    for name, cmd, deps in stages:
        script = script_of(cmd)
        script = _code_path(script, prefix) or script
        if script not in cache:
            cache[script] = closure(root, script)
        want = set(cache[script])
        have = {c for d in deps if (c := _code_path(d, prefix)) is not None}
        missing, extra = sorted(want - have), sorted(have - want)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(prefix + m for m in missing)}")
            if extra:
                parts.append(f"not imported {', '.join(prefix + e for e in extra)}")
            problems.append(f"{name}: {'; '.join(parts)}")
    return problems


_CMD = re.compile(r"^\s*cmd:\s*(.+?)\s*$")
_DEPS = re.compile(r"^(\s*)deps:(\s*&[\w-]+)?\s*$")
_ITEM = re.compile(r"^(\s*)- (\S+)\s*$")


def rewrite(text: str, root: Path, *, prefix: str = "") -> str:
    """``dvc.yaml`` text with each stage's code deps replaced by its script's
    closure (listed first, sorted; data deps kept in order; comments kept).

    A stage's ``cmd`` must come before its ``deps``; a ``deps: *alias`` reuses the
    list written where the anchor is defined.
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    script = None
    i = 0
    while i < len(lines):
        line = lines[i]
        cmd = _CMD.match(line)
        if cmd:
            script = script_of(cmd.group(1))
            script = _code_path(script, prefix) or script
        deps = _DEPS.match(line)
        out.append(line)
        i += 1
        if not deps:
            continue
        if script is None:
            raise FirthError(f"dvc.yaml line {i}: 'deps' before any 'cmd'")
        items = []
        indent = None
        while i < len(lines):
            item = _ITEM.match(lines[i])
            if not item or (indent is not None and item.group(1) != indent):
                break
            indent = item.group(1)
            items.append(item.group(2))
            i += 1
        if indent is None:
            raise FirthError(f"dvc.yaml line {i}: 'deps:' with no list under it")
        data = [d for d in items if _code_path(d, prefix) is None]
        code = [prefix + c for c in closure(root, script)]
        out.extend(f"{indent}- {d}\n" for d in code + data)
    return "".join(out)


_CODE_PATH = re.compile(r"(?<![\w./-])((?:stages|src|benchmarks)/)")


def for_project(text: str, *, prefix: str) -> str:
    """The root ``dvc.yaml`` as a profile project ``prefix`` below the root sees it:
    the same stages, the code (and benchmark results) reached through ``prefix``;
    data and reports stay the project's own."""
    out = [
        f"# Generated from {prefix}dvc.yaml by `firth deps --write`: edit that file, "
        "not this one.\n"
    ]
    in_deps = False
    for line in text.splitlines(keepends=True):
        if _CMD.match(line) or (in_deps and _ITEM.match(line)):
            line = _CODE_PATH.sub(lambda m: prefix + m.group(1), line)
        if _DEPS.match(line):
            in_deps = True
        elif not _ITEM.match(line):
            in_deps = False
        out.append(line)
    return "".join(out)


def profile_projects(root: Path) -> list[Path]:
    """The profile projects (``profiles/<name>/dvc.yaml``) under ``root``."""
    return sorted(p.parent for p in (Path(root) / "profiles").glob("*/dvc.yaml"))


def prefix_of(root: Path, project: Path) -> str:
    """The path from a project folder back to ``root`` (``../../``)."""
    return "../" * len(Path(project).resolve().relative_to(Path(root).resolve()).parts)
