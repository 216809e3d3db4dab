"""Shared entry-point behaviour of the stage CLIs: logging, and user errors as one
line on stderr with exit status 2 (no traceback for a bad file or key)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from firth.errors import FirthError


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="project folder holding data/ and reports/ (default: .)",
    )
    p.add_argument(
        "--params",
        type=Path,
        default=None,
        help="params file (default: ROOT/params.yaml)",
    )
    return p


def params_path(args: argparse.Namespace) -> Path:
    return args.params or args.root / "params.yaml"


def run(
    body: Callable[[argparse.Namespace], None],
    p: argparse.ArgumentParser,
    argv: Sequence[str] | None,
) -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for a torchrun relaunch
    try:
        body(args)
    except FirthError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
