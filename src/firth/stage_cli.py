"""Shared entry-point behaviour of the stage CLIs: logging, user errors as one line
on stderr with exit status 2 (no traceback for a bad file or key), and the path
arguments.

Every path a stage reads or writes is an argument that dvc.yaml passes (``path``):
dvc.yaml is the one place paths are written, and tests/test_stage_paths.py checks
that each passed path is one of the stage's deps or outs and that the stage opens
nothing else under data/ or reports/. With ``FIRTH_OPEN_LOG`` set, ``run`` records
every file the stage opens there (an audit hook, ``sys.addaudithook``) for that
test."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from firth.errors import FirthError


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--params",
        type=Path,
        default=Path("params.yaml"),
        help="params file (default: params.yaml, where DVC runs the stage)",
    )
    return p


def path(p: argparse.ArgumentParser, flag: str, what: str, *, required=True) -> None:
    """A path argument ``--flag``: what dvc.yaml passes (a dep, an out, or a
    scratch folder outside DVC's outputs)."""
    p.add_argument(f"--{flag}", type=Path, required=required, help=what)


def params_path(args: argparse.Namespace) -> Path:
    return args.params


def opened(event: str, args: tuple) -> tuple[str, str] | None:
    """The absolute path and mode ("r" or "w") of an ``open`` audit event (None
    for any other event)."""
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return None
    mode = args[1] if isinstance(args[1], str) else ""
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    writes = any(c in mode for c in "wax+") or flags & (
        os.O_WRONLY | os.O_RDWR | os.O_CREAT
    )
    return os.path.abspath(os.fsdecode(args[0])), "w" if writes else "r"


def _log_opens(log_path: str) -> None:
    """Append every path this process opens to ``log_path`` (JSON lines of the
    script's argv, the path and the mode), as it exits."""
    import atexit
    import json

    seen: dict[tuple[str, str], None] = {}

    def hook(event: str, args: tuple) -> None:
        if (found := opened(event, args)) is not None:
            seen[found] = None

    def flush() -> None:
        with open(log_path, "a", encoding="utf-8") as f:
            for name, mode in seen:
                row = {"argv": sys.argv, "path": name, "mode": mode}
                f.write(json.dumps(row) + "\n")

    sys.addaudithook(hook)
    atexit.register(flush)


def run(
    body: Callable[[argparse.Namespace], None],
    p: argparse.ArgumentParser,
    argv: Sequence[str] | None,
) -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    if log_path := os.environ.get("FIRTH_OPEN_LOG"):
        _log_opens(log_path)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for a torchrun relaunch
    try:
        body(args)
    except FirthError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
