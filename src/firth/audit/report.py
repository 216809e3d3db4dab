"""The contamination table of the report, in the GPT-3 appendix C format: each
score on all / dirty / clean evaluation examples, the counts, the clean share and
the relative difference clean vs all."""

from __future__ import annotations

from firth.formatting import num


def audit_sentence(audit: dict, what: str) -> str:
    sides = audit.get("sides", {})
    ns = ", ".join(f"{s} n = {v['n']}" for s, v in sides.items())
    exact = sum(v["exact_duplicates"] for v in sides.values())
    near = sum(v["near_duplicates"] for v in sides.values())
    against = audit["against"]
    if isinstance(against, dict):
        against = "; ".join(f"{k}: {v}" for k, v in against.items())
    return (
        f"Contamination audit ({against}): {audit['dirty']:,} of "
        f"{audit['examples']:,} {what} ({100 * audit['dirty_share']:.1f}%) are dirty "
        f"by word n-gram overlap ({ns}), exact duplicates ({exact} side matches) or "
        f"MinHash near duplicates (Jaccard >= "
        f"{audit['settings']['near_threshold']}; {near} side matches)."
    )


def contamination_table(
    rows: list[tuple[str, dict]], metrics: list[str], caption: str, scale: float = 1.0
) -> tuple[str, tuple[list[str], list[list[str]]]]:
    """``rows``: (name, {metric: split_scores result}); scores times ``scale``."""
    header = [
        "run",
        "metric",
        "all",
        "dirty",
        "clean",
        "n dirty",
        "n clean",
        "clean share",
        "clean vs all",
    ]
    body = []
    for name, c in rows:
        for m in metrics:
            s = c.get(m)
            if not s:
                continue
            body.append(
                [
                    name,
                    m,
                    *(
                        num(None if s[k] is None else scale * s[k], 2)
                        for k in ("all", "dirty", "clean")
                    ),
                    f"{s['n_dirty']:,}",
                    f"{s['n_clean']:,}",
                    "-"
                    if s["clean_share"] is None
                    else f"{100 * s['clean_share']:.1f}%",
                    "-"
                    if s["clean_vs_all"] is None
                    else f"{100 * s['clean_vs_all']:+.1f}%",
                ]
            )
    return caption, (header, body)
