"""The report page: data and tokenizer summaries as Markdown and self-contained HTML.

Built only from committed files: metrics (``reports/data``, ``reports/tokenizers``,
...) and the provenance record of each fetched source (``reports/sources``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from firth.formatting import fmt  # noqa: E402

Table = tuple[list[str], list[list[str]]]


@dataclass
class Section:
    title: str
    intro: str = ""
    tables: list[tuple[str, Table]] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    lead_figures: bool = False  # figures before the tables (the scorecard's)


SPLITS = ("train", "valid", "test")


def figure_png(fig) -> bytes:
    """The figure as PNG bytes (no timestamp metadata, so reruns are identical)."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def sources_section(sources: list[dict]) -> Section:
    rows = []
    for s in sources:
        where = s.get("package") or s.get("url") or s.get("id") or s.get("path") or ""
        if s.get("kind") == "bible-pair":
            where = f"{s['source']['package']} + {s['target']['package']}"
        rows.append(
            [
                s["group"],
                s["name"],
                s.get("kind", ""),
                where,
                (s.get("sha256") or "")[:12],
                s.get("license", ""),
            ]
        )
    return Section(
        "Data sources",
        "Every raw input, where it came from, the sha256 of "
        "the bytes read and its licence (full record: "
        "reports/sources/<group>/<name>.json, a copy of data/raw/<group>/<name>/"
        "SOURCE.json).",
        [
            (
                "",
                (
                    [
                        "group",
                        "name",
                        "kind",
                        "package / URL / id",
                        "sha256",
                        "licence",
                    ],
                    rows,
                ),
            )
        ],
    )


def text_section(stats: dict, sub: dict | None) -> Section:
    rows = []
    for split in SPLITS:
        e = stats["splits"][split]
        rows.append(
            [
                split,
                fmt(e["documents"]),
                fmt(e["tokens"]),
                fmt(e["types"]),
                fmt(e.get("oov_rate", "")) if split != "train" else "-",
                fmt(sub[split]["size_out"]) if sub else "-",
            ]
        )
    per = [
        [name, *(fmt(c.get(s, 0)) for s in ("train", "valid", "test"))]
        for name, c in stats["sources"].items()
    ]
    return Section(
        "Text corpus",
        "Split by document group (Wikipedia article, Bible "
        "chapter: one chapter lands in the same split in every version). OOV "
        "rate = share of valid/test tokens never seen in train.",
        [
            (
                "Splits",
                (
                    [
                        "split",
                        "documents",
                        "tokens",
                        "types",
                        "OOV rate",
                        "tokens after subsample",
                    ],
                    rows,
                ),
            ),
            ("Tokens per source", (["source", "train", "valid", "test"], per)),
        ],
    )


def parallel_section(stats: dict, sub: dict | None) -> Section:
    rows = [
        [
            s,
            fmt(e["pairs"]),
            fmt(e["mean_source_words"]),
            fmt(e["mean_target_words"]),
            fmt(sub[s]["units_out"]) if sub else "-",
        ]
        for s, e in ((s, stats["splits"][s]) for s in SPLITS)
    ]
    dropped = ", ".join(f"{k} {v:,}" for k, v in stats["dropped"].items())
    return Section(
        f"Parallel corpus: {stats['source']}",
        f"{stats['input_pairs']:,} pairs read; dropped: {dropped}. "
        "Split by id, so no id is in two splits.",
        [
            (
                "",
                (
                    [
                        "split",
                        "pairs",
                        "mean source words",
                        "mean target words",
                        "pairs after subsample",
                    ],
                    rows,
                ),
            )
        ],
    )


def tagged_section(name: str, stats: dict, sub: dict | None) -> Section:
    rows = [
        [
            s,
            fmt(e["sentences"]),
            fmt(e["tokens"]),
            fmt(e["bio_repairs"]),
            fmt(sub[s]["units_out"]) if sub else "-",
        ]
        for s, e in ((s, stats["splits"][s]) for s in SPLITS)
    ]
    tags = ", ".join(
        f"{t} {n:,}"
        for t, n in sorted(stats["tags"].items(), key=lambda kv: -kv[1])[:12]
    )
    return Section(
        f"Tagged corpus: {name}",
        f"Scheme: {stats['scheme']}"
        + ("; split 80/10/10 with the seed" if stats["resplit_80_10_10"] else "")
        + f". Most frequent tags: {tags}.",
        [
            (
                "",
                (
                    [
                        "split",
                        "sentences",
                        "tokens",
                        "I-X repaired to B-X",
                        "sentences after subsample",
                    ],
                    rows,
                ),
            )
        ],
    )


def tokenizer_section(tables: dict[str, list[dict]]) -> Section:
    sec = Section(
        "Tokenization trade-off",
        "Word, character and BPE segmentations of "
        "the valid split (a line is a verse, a sentence pair side or an "
        "article): words explode the vocabulary and leave OOVs, characters "
        "explode the length, BPE sits between.",
    )
    for kind, rows in tables.items():
        body = [
            [
                r["scheme"],
                fmt(int(r["vocab_size"])),
                fmt(float(r["oov_rate"])),
                fmt(float(r["mean_tokens_per_line"])),
            ]
            for r in rows
        ]
        sec.tables.append(
            (kind, (["scheme", "vocabulary", "OOV/unk rate", "tokens per line"], body))
        )
    if tables:
        sec.figures.append(
            ("Vocabulary size against sequence length", tokenizer_figure(tables))
        )
    return sec


def tokenizer_figure(tables: dict[str, list[dict]]) -> bytes:
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for kind, rows in tables.items():
        pts = sorted(
            (int(r["vocab_size"]), float(r["mean_tokens_per_line"]), r["scheme"])
            for r in rows
        )
        bpe = [(v, t) for v, t, s in pts if s.startswith("bpe")]
        (line,) = ax.plot(
            [v for v, _ in bpe], [t for _, t in bpe], marker="o", label=f"{kind}: BPE"
        )
        for v, t, s in pts:
            if not s.startswith("bpe"):
                ax.scatter(
                    [v], [t], marker="s" if s == "word" else "^", color=line.get_color()
                )
                ax.annotate(
                    f"{kind}: {s}",
                    (v, t),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=8,
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("vocabulary size")
    ax.set_ylabel("mean tokens per line (valid)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return figure_png(fig)


def _flat_params(d: object, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(d, dict) and d:
        out = []
        for k, v in d.items():
            out += _flat_params(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return [(prefix, str(d))]


def settings_table(
    *,
    revision: str,
    params: dict[str, object],
    data: dict[str, str],
    sources: list[dict],
    extra: dict[str, str] | None = None,
) -> tuple[str, Table]:
    """A task card's exact settings: the code revision, every params key the task's
    stages read (``params``: section name -> its value), the sha256 of the training
    data each run saw (``data``: run -> hash), the raw sources behind it, and
    anything task-specific (``extra``, e.g. the sacreBLEU signatures)."""
    rows = [["code revision", revision]]
    for name, value in params.items():
        groups: dict[str, list[str]] = {}
        for key, v in _flat_params(value, name):
            head, _, rest = key.rpartition(".")
            groups.setdefault(head or key, []).append(f"{rest or key}={v}")
        rows += [[f"params {g}", ", ".join(kv)] for g, kv in groups.items()]
    by_hash: dict[str, list[str]] = {}
    for run, h in sorted(data.items()):
        by_hash.setdefault(h[:12] if h else "not recorded", []).append(run)
    rows += [
        [f"training data sha256 ({', '.join(runs)})", h] for h, runs in by_hash.items()
    ]
    rows += [
        [
            f"source {s.get('group', '')}/{s.get('name', '')}",
            (s.get("sha256") or "")[:12],
        ]
        for s in sources
    ]
    rows += [[k, v] for k, v in (extra or {}).items()]
    return "Settings", (["setting", "value"], rows)


def not_run_section(title: str, reason: str) -> Section:
    """A task that has no results, and why."""
    return Section(title, f"Not run: {reason}")
