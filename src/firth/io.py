"""Atomic output: nothing half-written survives a failure.

Files are written to a temporary sibling and moved into place with ``os.replace``;
directories are built under a temporary sibling and swapped in as a whole.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place on success.

    Works for files and directories: whatever the body creates at the yielded
    path replaces ``path`` only if the body returns without an exception.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    tmp = tmp_dir / path.name
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"{path}: nothing was written")
        if path.is_dir() and not path.is_symlink():
            old = path.parent / f".{path.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_folder(path: str | Path, fill) -> None:
    """A new folder at ``path`` filled by ``fill(folder)``, swapped in atomically."""
    with atomic_path(path) as tmp:
        tmp.mkdir()
        fill(tmp)


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON atomically."""
    write_text(
        path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )


def write_curve(path: str | Path, rows: list[dict], columns: list[str]) -> None:
    """``rows`` as CSV with ``columns`` (floats to 6 decimals), atomically; the
    header alone for no rows."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            for row in rows:
                w.writerow(
                    {
                        k: round(v, 6) if isinstance(v, float) else v
                        for k, v in row.items()
                    }
                )


def write_rows(
    path: str | Path, header: list[str], rows, *, delimiter: str = ","
) -> None:
    """``rows`` (sequences) under ``header`` as CSV (or TSV), atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            terminator = "\n" if delimiter == "\t" else "\r\n"
            w = csv.writer(f, delimiter=delimiter, lineterminator=terminator)
            w.writerow(header)
            w.writerows(rows)


def read_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, *, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_tree(path: str | Path) -> str:
    """A content hash of a file or of every file below a directory (names included)."""
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    for p in sorted(q for q in path.rglob("*") if q.is_file()):
        h.update(p.relative_to(path).as_posix().encode())
        h.update(b"\0")
        h.update(sha256_file(p).encode())
    return h.hexdigest()


def shown(path: str | Path) -> str:
    """``path`` as records name it: relative to the working directory (where DVC
    runs a stage) when it is below it, else as given."""
    path = Path(path)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()
