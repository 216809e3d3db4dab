"""The report's one table of partial-input baselines across tasks: each task's full
model beside the baseline that sees only part of the input (or none of it), from
the committed metrics alone.

- analogies: 3CosAdd against only-b (the nearest neighbour of b; a and a* unseen);
- language models: the best model against the unigram model (no context);
- translation: the best attention model against copy-source (the source unchanged,
  no model) and the target-side LM (no source);
- tagging: each run's best initialisation against the word-only tagger (no context);
- NLI: premise + hypothesis against hypothesis-only (a named row saying how to
  enable it where no NLI data is configured).
"""

from __future__ import annotations

from firth.embeddings.results import EmbeddingEval
from firth.formatting import num
from firth.lm.results import LmEval
from firth.nli.report import ENABLE
from firth.nli.results import NliEval
from firth.nmt.results import NmtEval
from firth.report import Section
from firth.tagging.results import TaggerEval


def partial_input_section(
    embeddings: dict[str, EmbeddingEval],
    lm: dict[str, LmEval],
    nmt: dict[str, NmtEval],
    tagging: dict[str, TaggerEval],
    nli: dict[str, NliEval] | None = None,
) -> Section:
    rows: list[list[str]] = []
    for method, e in sorted(embeddings.items()):
        top = e.summary.analogy_at("top")
        if top is None or top.cos_add.mean is None or top.only_b.mean is None:
            continue
        full, part = top.cos_add.mean, top.only_b.mean
        rows.append(
            [
                "analogy (questions-words, top 30k)",
                f"{method} 3CosAdd",
                num(100 * full, 2),
                "only-b (ignores a and a*)",
                num(100 * part, 2),
                num(100 * (full - part), 2),
                "accuracy %",
            ]
        )
    scored = {r: e for r, e in lm.items() if "unigram" in e.test.baselines}
    if scored:
        best = min(scored, key=lambda r: scored[r].test.perplexity)
        t = scored[best].test
        uni = t.baselines["unigram"].perplexity
        rows.append(
            [
                f"language model ({scored[best].unit} test perplexity)",
                best,
                num(t.perplexity, 2),
                "unigram (no context)",
                num(uni, 2),
                num(t.perplexity - uni, 2),
                "perplexity (lower is better)",
            ]
        )
    attention = {
        r: e
        for r, e in nmt.items()
        if e.model not in ("none", "context", "target-lm", "copy-source")
    }
    if attention:
        best = max(attention, key=lambda r: attention[r].beam.bleu)
        b = attention[best].beam
        for name, label in (
            ("copy-source", "copy-source (no model)"),
            ("target-lm", "target-side LM (no source)"),
        ):
            if name in nmt:
                p = nmt[name].beam
                rows.append(
                    [
                        "translation (KJV -> WEB test, beam BLEU)",
                        best,
                        num(b.bleu, 2),
                        label,
                        num(p.bleu, 2),
                        num(b.bleu - p.bleu, 2),
                        "BLEU",
                    ]
                )
    for r, e in sorted(tagging.items()):
        key = e.metric
        best = max(e.inits, key=lambda i: e.headline(i).mean)
        full = e.headline(best).mean
        part = getattr(e.baselines["word-only"], key)
        rows.append(
            [
                f"tagging ({e.data}, {'entity F1' if key == 'f1' else 'accuracy'})",
                f"{r} ({best}, seed mean)",
                num(100 * full, 2),
                "word-only (no context)",
                num(100 * part, 2),
                num(100 * (full - part), 2),
                "points",
            ]
        )
    nli = nli or {}
    for data in sorted({e.data for e in nli.values()}):
        by = {e.model: e for e in nli.values() if e.data == data}
        if "pair" not in by or "hypothesis" not in by:
            continue
        full = by["pair"].summary.accuracy.mean
        part = by["hypothesis"].summary.accuracy.mean
        maj = by["pair"].baselines["majority"].accuracy
        rows.append(
            [
                f"NLI ({data}, test accuracy)",
                "premise + hypothesis (seed mean)",
                num(100 * full, 2),
                f"hypothesis-only (majority class: {100 * maj:.2f})",
                num(100 * part, 2),
                num(100 * (full - part), 2),
                "points",
            ]
        )
    rows = [[*r, f"→ {_section_of(r[0])}"] for r in rows]
    sec = Section(
        "Partial-input baselines",
        "Every task's full model beside a baseline that sees only part of the input "
        "(or none of it), from the committed metrics of the task sections below. "
        "A small gap means the benchmark can be solved without the part the "
        "baseline ignores." + ("" if nli else " " + ENABLE),
    )
    sec.tables.append(
        (
            "Full model against its partial-input baseline",
            (
                [
                    "task",
                    "full model",
                    "score",
                    "partial-input baseline",
                    "score",
                    "gap",
                    "unit",
                    "details",
                ],
                rows,
            ),
        )
    )
    return sec


# the report section holding the evidence of a row, by the row's task label
_SECTIONS = (
    ("analogy", "Word embeddings"),
    ("language model", "Language models"),
    ("translation", "Translation"),
    ("tagging", "Sequence labelling"),
    ("NLI", "Natural language inference"),
)


def _section_of(task: str) -> str:
    return next(title for prefix, title in _SECTIONS if task.startswith(prefix))
