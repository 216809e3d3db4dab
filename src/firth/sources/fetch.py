"""Resolve a ``sources`` entry of params.yaml and write ``data/raw/<name>/``.

An entry is a string naming a registered source (``wikipedia-sample``, ``wnut16``,
``url:text8``, ``hf:wikitext-2``), a Bible version or pair (``bible:KJV``,
``bible-pair:KJV-WEB``), a local file (``local:path/to/file.conll``), or a mapping
with ``kind`` (url, hf, local), ``format`` and the kind's keys for sources of your own.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from firth.config import SourceSpec, validate_section
from firth.errors import ConfigError
from firth.io import atomic_path
from firth.sources.kinds import (
    BiblePair,
    BibleVersion,
    Source,
    custom,
    registered,
)
from firth.sources.provenance import written_files
from firth.sources.registry import REGISTRY

log = logging.getLogger(__name__)
LOCAL_FORMATS = {
    ".conll": "tagged",
    ".conllu": "tagged",
    ".bio": "tagged",
    ".txt": "text",
    ".jsonl": "text",
}


def resolve(name: str, value: Any) -> Source:
    """Turn a params entry into the Source it names (firth.sources.kinds)."""
    if isinstance(value, dict):
        return custom(validate_section(SourceSpec, value, name=f"sources.{name}"))
    if not isinstance(value, str):
        raise ConfigError(
            f"params.yaml: key 'sources.{name}': expected a string or a "
            f"mapping, got {value!r}"
        )
    kind, sep, arg = value.partition(":")
    if not sep:
        kind, arg = "", value
    if kind == "bible":
        return BibleVersion(arg)
    if kind == "bible-pair":
        return BiblePair(arg)
    if kind == "local":
        fmt = LOCAL_FORMATS.get(Path(arg).suffix)
        if fmt is None:
            raise ConfigError(
                f"params.yaml: key 'sources.{name}': cannot tell the format "
                f"of {arg!r} from its suffix; use a mapping with kind: local, "
                "format: text|parallel|tagged|analogy|similarity, path: ..."
            )
        return custom(SourceSpec(kind="local", format=fmt, path=arg))
    if arg not in REGISTRY:
        raise ConfigError(
            f"params.yaml: key 'sources.{name}': unknown source {value!r} "
            f"(registered: {', '.join(sorted(REGISTRY))}; or bible:<VERSION>, "
            "bible-pair:<SRC>-<TGT>, local:<path>)"
        )
    reg = REGISTRY[arg]
    if kind and kind != reg.kind:
        raise ConfigError(
            f"params.yaml: key 'sources.{name}': {arg} is a {reg.kind} "
            f"source, not {kind}"
        )
    return registered(reg)


def _previous_record(out_dir: Path) -> dict:
    """The SOURCE.json a previous fetch left in ``out_dir`` ({} if none)."""
    return _previous_record_file(out_dir / "SOURCE.json")


def _previous_record_file(path: Path) -> dict:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def previous_sha256(record: dict) -> str:
    """The checksum a previous download (a URL's file, or a package's archive)
    recorded in its SOURCE.json, if any."""
    download = record.get("download")
    sha = download.get("sha256") if isinstance(download, dict) else None
    if record.get("read_from") == "downloaded archive":
        sha = record.get("archive_sha256")
    return sha if isinstance(sha, str) else ""


def fetch(
    name: str,
    value: Any,
    out_dir: Path,
    *,
    cache_dir: Path,
    previous: Path | None = None,
) -> dict:
    """Fetch one source into ``out_dir`` atomically; return the SOURCE.json record.

    The previous record is ``out_dir``'s SOURCE.json or, on a machine that has not
    fetched it yet, ``previous`` (the committed copy, reports/sources/...): a
    download is checked against the checksum it recorded, and the same bytes again
    keep its retrieval time, so a fresh clone refetches byte-identical raw data."""
    spec = resolve(name, value)
    before = _previous_record(out_dir)
    if not before and previous is not None and previous.is_file():
        before = _previous_record_file(previous)
    # a checksum recorded for another spec (a changed URL) says nothing of this one
    same = before.get("spec") == json.loads(json.dumps(value))
    recorded = previous_sha256(before) if same else ""
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        record = spec.fetch_into(tmp, cache_dir=cache_dir, recorded=recorded)
        # what this fetch wrote, so a prepare stage can tell the raw data changed
        record["files"] = written_files(tmp)
        record["name"] = name
        record["spec"] = value
        record["retrieved"] = datetime.now(UTC).isoformat(timespec="seconds")
        if before and {k: v for k, v in before.items() if k != "retrieved"} == {
            k: v for k, v in json.loads(json.dumps(record)).items() if k != "retrieved"
        }:
            # the same bytes again (a forced refresh): keep the first retrieval
            # time, so the output, dvc.lock and everything downstream stay as
            # they were
            record["retrieved"] = before.get("retrieved", record["retrieved"])
        (tmp / "SOURCE.json").write_text(
            json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
    return record
