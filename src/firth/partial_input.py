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
    rows = [
        *embedding_rows(embeddings),
        *lm_rows(lm),
        *nmt_rows(nmt),
        *tagging_rows(tagging),
        *nli_rows(nli or {}),
    ]
    rows = [[*r, f"→ {_section_of(r[0])}"] for r in rows]
    sec = Section(
        "Partial-input baselines",
        "Every task's full model beside a baseline that sees only part of the input "
        "(or none of it), from the committed metrics of the task sections below. "
        "A small gap means the benchmark can be solved without the part the "
        "baseline ignores." + ("" if nli else " " + ENABLE),
    )
    sec.tables.append(
        ("Full model against its partial-input baseline", (COLUMNS, rows))
    )
    return sec


COLUMNS = [
    "task",
    "full model",
    "score",
    "partial-input baseline",
    "score",
    "gap",
    "unit",
    "details",
]


def _row(task, full_name, full, partial_name, partial, unit, scale=1.0) -> list:
    """One table row: both scores and the gap (full - partial), times ``scale``."""
    return [
        task,
        full_name,
        num(scale * full, 2),
        partial_name,
        num(scale * partial, 2),
        num(scale * (full - partial), 2),
        unit,
    ]


def embedding_rows(embeddings: dict[str, EmbeddingEval]) -> list[list]:
    """3CosAdd against only-b, per method."""
    rows = []
    for method, e in sorted(embeddings.items()):
        top = e.summary.analogy_at("top")
        if top is None or top.cos_add.mean is None or top.only_b.mean is None:
            continue
        rows.append(
            _row(
                "analogy (questions-words, top 30k)",
                f"{method} 3CosAdd",
                top.cos_add.mean,
                "only-b (ignores a and a*)",
                top.only_b.mean,
                "accuracy %",
                scale=100,
            )
        )
    return rows


def lm_rows(lm: dict[str, LmEval]) -> list[list]:
    """The best language model against the unigram model."""
    scored = {r: e for r, e in lm.items() if "unigram" in e.test.baselines}
    if not scored:
        return []
    best = min(scored, key=lambda r: scored[r].test.perplexity)
    t = scored[best].test
    return [
        _row(
            f"language model ({scored[best].unit} test perplexity)",
            best,
            t.perplexity,
            "unigram (no context)",
            t.baselines["unigram"].perplexity,
            "perplexity (lower is better)",
        )
    ]


def nmt_rows(nmt: dict[str, NmtEval]) -> list[list]:
    """The best attention model against copying and the target-side LM."""
    attention = {
        r: e
        for r, e in nmt.items()
        if e.model not in ("none", "context", "target-lm", "copy-source")
    }
    if not attention:
        return []
    best = max(attention, key=lambda r: attention[r].beam.bleu)
    return [
        _row(
            "translation (KJV -> WEB test, beam BLEU)",
            best,
            attention[best].beam.bleu,
            label,
            nmt[name].beam.bleu,
            "BLEU",
        )
        for name, label in (
            ("copy-source", "copy-source (no model)"),
            ("target-lm", "target-side LM (no source)"),
        )
        if name in nmt
    ]


def tagging_rows(tagging: dict[str, TaggerEval]) -> list[list]:
    """Each tagger run's best init against the word-only baseline."""
    rows = []
    for r, e in sorted(tagging.items()):
        key = e.metric
        best = max(e.inits, key=lambda i: e.headline(i).mean)
        rows.append(
            _row(
                f"tagging ({e.data}, {'entity F1' if key == 'f1' else 'accuracy'})",
                f"{r} ({best}, seed mean)",
                e.headline(best).mean,
                "word-only (no context)",
                getattr(e.baselines["word-only"], key),
                "points",
                scale=100,
            )
        )
    return rows


def nli_rows(nli: dict[str, NliEval]) -> list[list]:
    """Premise and hypothesis against the hypothesis only, per dataset."""
    rows = []
    for data in sorted({e.data for e in nli.values()}):
        by = {e.model: e for e in nli.values() if e.data == data}
        if "pair" not in by or "hypothesis" not in by:
            continue
        maj = by["pair"].baselines["majority"].accuracy
        rows.append(
            _row(
                f"NLI ({data}, test accuracy)",
                "premise + hypothesis (seed mean)",
                by["pair"].summary.accuracy.mean,
                f"hypothesis-only (majority class: {100 * maj:.2f})",
                by["hypothesis"].summary.accuracy.mean,
                "points",
                scale=100,
            )
        )
    return rows


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
