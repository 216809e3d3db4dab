"""Text normalisation shared by the prepare stages."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_QUOTES = str.maketrans(
    {
        "`": "'",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2014": " -- ",
        "\u2013": "-",
    }
)
_BRACKETS = re.compile(r"[\[\]]")
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]")


def normalize(text: str) -> str:
    """NFKC, straight quotes (the WEB writes apostrophes as backticks), no italic
    brackets (the KJV marks supplied words as ``[was]``), single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _BRACKETS.sub("", text)
    return " ".join(text.split())


def tokenize(text: str, *, lowercase: bool) -> list[str]:
    """Words (with inner apostrophes) and single punctuation marks."""
    if lowercase:
        text = text.lower()
    return _TOKEN.findall(text)


def unit_hash(seed: int, key: str) -> float:
    """A deterministic number in [0, 1) for a split unit, independent of order."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_split(u: float, *, valid_fraction: float, test_fraction: float) -> str:
    if u < test_fraction:
        return "test"
    if u < test_fraction + valid_fraction:
        return "valid"
    return "train"
