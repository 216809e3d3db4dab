"""Wikipedia XML dumps cleaned with the text8 rules.

A port of Matt Mahoney's ``wikifil.pl`` (the script that made text8/enwik9 text),
applied to the text of each article: keep only the visible article text, drop
references, tags, templates, tables and link targets (keeping link text and image
captions), lowercase, spell out digits, and keep only letters a-z and single spaces.
Redirects and pages outside the main namespace are dropped. The Perl original reads
the dump in ``>``-terminated records; applying the rules to whole articles (and
removing nested ``{{...}}`` from the inside out) removes templates the original
leaves half-stripped when they span records.
"""

from __future__ import annotations

import bz2
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

_DIGITS = {
    str(d): f" {w} "
    for d, w in enumerate("zero one two three four five six seven eight nine".split())
}
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"<ref[^<]*</ref>", re.S), ""),  # references
    (re.compile(r"<[^>]*>"), ""),  # xhtml tags
    (re.compile(r"\[http:[^\] ]*"), "["),  # urls, keep visible text
    (re.compile(r"\|thumb", re.I), ""),  # image options
    (re.compile(r"\|left", re.I), ""),
    (re.compile(r"\|right", re.I), ""),
    (re.compile(r"\|\d+px", re.I), ""),
    (re.compile(r"\[\[image:[^\[\]]*\|", re.I), ""),  # image link, keep caption
    (re.compile(r"\[\[category:([^|\]]*)[^\]]*\]\]", re.I), r"[[\1]]"),
    (re.compile(r"\[\[[a-z\-]*:[^\]]*\]\]"), ""),  # interlanguage links
    (re.compile(r"\[\[[^\|\]]*\|"), "[["),  # link target, keep text
]
_INNER_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_INNER_BRACE = re.compile(r"\{[^{}]*\}")
_ENTITY = re.compile(r"&[^;\s]*;")
_NON_LETTERS = re.compile(r"[^a-z]+")


def _strip_nested(pattern: re.Pattern[str], text: str) -> str:
    while True:
        text, n = pattern.subn("", text)
        if n == 0:
            return text


def wikifil(text: str) -> str:
    """Clean one article's wikitext with the text8 rules."""
    text = text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    text = _strip_nested(_INNER_TEMPLATE, text)  # {{icons}}
    text = _strip_nested(_INNER_BRACE, text)  # {| tables |}
    text = text.replace("[", "").replace("]", "")
    text = _ENTITY.sub(" ", text)
    text = text.lower()
    for digit, word in _DIGITS.items():
        text = text.replace(digit, word)
    return _NON_LETTERS.sub(" ", text).strip()


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def iter_articles(data: bytes) -> Iterator[tuple[str, str, str]]:
    """Yield ``(page_id, title, cleaned_text)`` for main-namespace, non-redirect pages
    of a (possibly bz2-compressed) MediaWiki XML export."""
    raw = bz2.decompress(data) if data[:3] == b"BZh" else data
    for _, elem in ET.iterparse(io.BytesIO(raw), events=("end",)):
        if _local(elem.tag) != "page":
            continue
        fields = {_local(child.tag): child for child in elem}
        ns = fields.get("ns")
        is_redirect = "redirect" in fields
        revision = fields.get("revision")
        text_el = None
        if revision is not None:
            text_el = next((c for c in revision if _local(c.tag) == "text"), None)
        wikitext = text_el.text if text_el is not None and text_el.text else ""
        if re.match(r"\s*#redirect", wikitext, re.I):
            is_redirect = True
        if (ns is None or (ns.text or "0") == "0") and not is_redirect and wikitext:
            page_id = fields["id"].text if "id" in fields else ""
            title = fields["title"].text if "title" in fields else ""
            cleaned = wikifil(wikitext)
            if cleaned:
                yield page_id or title, title, cleaned
        elem.clear()
