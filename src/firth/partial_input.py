"""The report's one table of partial-input baselines across tasks: every model
beside the baseline that sees only part of the input (or none of it), each row a
paired bootstrap test (firth.inference) on the committed per-item statistics.

- analogies: 3CosAdd against only-b (the nearest neighbour of b; a and a* unseen),
  per method;
- language models: every family against the add-one unigram model of its own
  vocabulary (no context), in bits per character;
- translation: every model against copy-source (the source unchanged, no model) and
  the target-side LM (no source), in beam BLEU;
- tagging: every run, at its initialisation chosen on validation, against the
  word-only tagger (no context);
- NLI: premise + hypothesis against hypothesis-only (a named row saying how to
  enable it where no NLI data is configured).

Every model is the mean over its seeds; no row is chosen by a test score.
"""

from __future__ import annotations

from firth.evidence import (
    BLEU_METRIC,
    BPC,
    HIT,
    Evidence,
    NoEvidence,
    chosen_init,
    hit_side,
    label,
    lm_side,
    lm_systems,
    nli_side,
    nmt_sides,
    nmt_systems,
    tag_baseline,
    tag_metric,
    tag_side,
)
from firth.inference import Test, compare
from firth.nli.report import ENABLE
from firth.report import Section
from firth.results import Record

ANALOGY = "analogy-google"


class PartialRow(Record):
    """One model against one partial-input baseline."""

    task: str
    model: str
    baseline: str
    unit: str
    test: Test


def partial_input_rows(ev: Evidence) -> list[PartialRow]:
    rows: list[PartialRow] = []
    for part in (_embedding_rows, _lm_rows, _nmt_rows, _tagging_rows, _nli_rows):
        rows += part(ev)
    return rows


def _embedding_rows(ev: Evidence) -> list[PartialRow]:
    rows = []
    for method in sorted(ev.emb):
        try:
            a = hit_side(ev, method, ANALOGY, "3cosadd", method)
            b = hit_side(ev, method, ANALOGY, "only_b", "only-b")
        except NoEvidence:
            continue
        cand = ev.emb_items[method].analogy[ANALOGY].candidates
        rows.append(
            PartialRow(
                task=f"analogy ({ANALOGY}, {cand:,} candidate words)",
                model=f"{label(method, a)} 3CosAdd",
                baseline="only-b (ignores a and a*)",
                unit="accuracy %",
                test=compare(a, b, HIT, ev.rule),
            )
        )
    return rows


def _lm_rows(ev: Evidence) -> list[PartialRow]:
    rows = []
    for name, runs in sorted(lm_systems(ev.lm).items()):
        try:
            a = lm_side(ev, name, runs)
            b = lm_side(ev, "unigram", runs, unigram=True)
        except NoEvidence:
            continue
        rows.append(
            PartialRow(
                task=f"language model ({ev.lm[runs[0]].unit} unit)",
                model=label(name, a),
                baseline="unigram (no context)",
                unit="bits per character (lower is better)",
                test=compare(a, b, BPC, ev.rule),
            )
        )
    return rows


def _nmt_rows(ev: Evidence) -> list[PartialRow]:
    groups = nmt_systems(ev.nmt)
    base = {ev.nmt[r[0]].model: (n, r) for n, r in groups.items()}
    rows = []
    for name, runs in sorted(groups.items()):
        if ev.nmt[runs[0]].model in ("copy-source", "target-lm"):
            continue
        for model, what in (
            ("copy-source", "copy-source (no model)"),
            ("target-lm", "target-side LM (no source)"),
        ):
            if model not in base:
                continue
            bname, bruns = base[model]
            try:
                a, b = nmt_sides(ev, runs, bruns, "bleu", (name, bname))
            except NoEvidence:
                continue
            rows.append(
                PartialRow(
                    task="translation (test verses, beam BLEU)",
                    model=label(name, a),
                    baseline=what if b.seeds == 1 else f"{what}, {b.seeds} seeds",
                    unit="BLEU",
                    test=compare(a, b, BLEU_METRIC, ev.rule),
                )
            )
    return rows


def _tagging_rows(ev: Evidence) -> list[PartialRow]:
    rows = []
    for run, e in sorted(ev.tagging.items()):
        try:
            init = chosen_init(ev, run)
            a = tag_side(ev, run, init)
            b = tag_baseline(ev, run, "word-only")
        except NoEvidence:
            continue
        metric = tag_metric(e)
        rows.append(
            PartialRow(
                task=f"tagging ({e.data}, {metric.name.split(' %')[0]})",
                model=f"{label(run, a)}, {init} (chosen on validation)",
                baseline="word-only (no context)",
                unit="points",
                test=compare(a, b, metric, ev.rule),
            )
        )
    return rows


def _nli_rows(ev: Evidence) -> list[PartialRow]:
    rows = []
    for data in sorted({e.data for e in ev.nli.values()}):
        by = {e.model: r for r, e in ev.nli.items() if e.data == data}
        if "pair" not in by or "hypothesis" not in by:
            continue
        try:
            a, b = nli_side(ev, by["pair"]), nli_side(ev, by["hypothesis"])
        except NoEvidence:
            continue
        maj = ev.nli[by["pair"]].baselines["majority"].accuracy
        rows.append(
            PartialRow(
                task=f"NLI ({data}, test accuracy)",
                model=f"premise + hypothesis ({a.seeds} seeds)",
                baseline=f"hypothesis-only (majority class: {100 * maj:.2f})",
                unit="accuracy %",
                test=compare(a, b, HIT, ev.rule),
            )
        )
    return rows


COLUMNS = [
    "task",
    "model",
    "score",
    "partial-input baseline",
    "score",
    "difference [95% CI]",
    "n items",
    "verdict",
    "unit",
    "details",
]

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


def _short(rows: list[PartialRow]) -> str:
    """How far each model that did not beat its baseline is from it (for an
    inconclusive test, the test items its difference would need: the interval's
    half-width scales as 1/sqrt(n)), and, for copying the source, what that
    baseline's score means."""
    short = [r for r in rows if r.test.verdict != "holds"]
    if not short:
        return ""

    def why(t) -> str:  # at this difference, how many test items would decide it
        return (
            f"; at this difference it would need about {t.needs:,} test items, "
            f"not {t.n:,}"
            if t.needs
            else ""
        )

    parts = [
        f"{r.model} against {r.baseline}: {r.test.interval(2)} {r.unit} "
        f"({r.test.verdict}{why(r.test)})"
        for r in short
    ]
    out = " Not beaten: " + "; ".join(parts) + "."
    copy = [r for r in short if r.baseline.startswith("copy-source")]
    if copy:
        out += (
            f" Copying the source scores {copy[0].test.b.score:.1f} BLEU on this "
            "test set, the overlap of its sources and references: a model beats it "
            "only by translating better than that overlap."
        )
    return out


def partial_input_section(rows: list[PartialRow], *, nli: bool) -> Section:
    digits = {"bits per character (lower is better)": 4}
    table = []
    for r in rows:
        t, d = r.test, digits.get(r.unit, 2)
        table.append(
            [
                r.task,
                r.model,
                f"{t.a.score:.{d}f}",
                r.baseline,
                f"{t.b.score:.{d}f}",
                t.interval(d),
                f"{t.n:,}",
                t.verdict,
                r.unit,
                f"→ {_section_of(r.task)}",
            ]
        )
    held = sum(r.test.verdict == "holds" for r in rows)
    sec = Section(
        "Partial-input baselines",
        "Every model beside a baseline that sees only part of the input (or none "
        "of it), tested as the findings are (paired bootstrap over the test items, "
        f"seeds resampled): {held} of {len(rows)} models beat their baseline. A "
        "model that does not beat it has not shown that it uses the part the "
        "baseline ignores." + _short(rows) + ("" if nli else " " + ENABLE),
    )
    sec.tables.append(
        ("Models against their partial-input baselines", (COLUMNS, table))
    )
    return sec
