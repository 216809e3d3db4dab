"""What a fetch recorded of a raw folder (its SOURCE.json), and the check every
stage that reads data/raw makes before reading: each file's sha256 as its fetch
recorded it (``checked_raw``). A light module, so that a stage reading raw data
does not import the fetchers."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from firth.errors import DataError
from firth.io import sha256_file

log = logging.getLogger(__name__)


def written_files(raw_dir: Path) -> dict[str, str]:
    """sha256 of every file in a fetched folder (SOURCE.json aside), by path."""
    return {
        f.relative_to(raw_dir).as_posix(): sha256_file(f)
        for f in sorted(raw_dir.rglob("*"))
        if f.is_file() and f.name != "SOURCE.json"
    }


def checked_raw(src_dir: Path) -> dict:
    """``provenance_summary`` of a fetched folder after checking its files against
    the sha256 its fetch recorded in SOURCE.json: a file changed, missing or added
    since is an error (so ``dvc repro -s prepare-...`` never reads corrupted raw
    data). A SOURCE.json that records no files (an older fetch) is not checked."""
    summary = provenance_summary(src_dir)
    meta = json.loads((src_dir / "SOURCE.json").read_text(encoding="utf-8"))
    recorded = meta.get("files")
    if not isinstance(recorded, dict):
        log.warning("%s: SOURCE.json records no file checksums; not checked", src_dir)
        return summary
    actual = written_files(src_dir)
    for rel in sorted(recorded.keys() | actual.keys()):
        want, got = recorded.get(rel), actual.get(rel)
        if want == got:
            continue
        state = (
            "is missing"
            if got is None
            else "was not written by the fetch"
            if want is None
            else f"has sha256 {got[:12]}..., its fetch recorded {want[:12]}..."
        )
        raise DataError(
            f"{src_dir / rel}: {state} (SOURCE.json); the raw data changed after "
            "it was fetched: fetch it again (dvc repro -f -s fetch-<kind>@<name>)"
        )
    return summary


def provenance_summary(src_dir: Path) -> dict:
    """The provenance fields of a fetched source's SOURCE.json, for reports."""
    meta_path = src_dir / "SOURCE.json"
    if not meta_path.exists():
        raise DataError(f"{meta_path}: not found; run the fetch stage first")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    keep = (
        "kind",
        "package",
        "member",
        "url",
        "id",
        "path",
        "sha256",
        "license",
        "retrieved",
        "spec",
        "source",
        "target",
    )
    return {k: meta[k] for k in keep if k in meta}
