"""The scorecard: every known finding and every partial-input baseline tested on a
profile's committed files alone (reports/: eval.json, items.json.gz and the
taggers' train.json), written as reports/scorecard.json and as the report's first
two sections, the findings drawn one panel each.

``load_evidence`` reads only what is committed, so a fresh clone recomputes every
verdict of both profiles without training anything (``firth scorecard``;
tests/test_scorecard.py checks the committed scorecards against it)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import matplotlib
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from firth.bias.results import BiasEval, BiasItems  # noqa: E402
from firth.embeddings.config import WORD2VEC_METHODS  # noqa: E402
from firth.embeddings.results import (  # noqa: E402
    EmbeddingEval,
    EmbeddingItems,
    Word2VecTrain,
)
from firth.evidence import Evidence  # noqa: E402
from firth.findings import Finding, findings, tally  # noqa: E402
from firth.inference import FAILS, HOLDS, Rule, Test, rule_text  # noqa: E402
from firth.lm.results import LmEval, LmItems  # noqa: E402
from firth.nli.results import NliEval, NliItems  # noqa: E402
from firth.nmt.results import (  # noqa: E402
    AttentionEval,
    AttentionItems,
    NmtEval,
    NmtItems,
)
from firth.partial_input import (  # noqa: E402
    PartialRow,
    partial_input_rows,
    partial_input_section,
)
from firth.probe.results import ProbeEval, ProbeItems  # noqa: E402
from firth.report import Section, figure_png  # noqa: E402
from firth.results import Record, load, load_items  # noqa: E402
from firth.tagging.results import TaggerEval, TaggerItems, TaggerTrain  # noqa: E402

log = logging.getLogger(__name__)
COLOURS = {HOLDS: "#2e7d32", FAILS: "#c62828"}  # inconclusive and not run: grey
GREY = "#7a7a7a"


class Scorecard(Record):
    """reports/scorecard.json: the rule, every finding and every partial-input
    row, each with its tests."""

    rule: dict
    tally: str
    findings: list[Finding]
    partial_input: list[PartialRow]


def declared(params: dict) -> dict[str, set[str] | None]:
    """The run folders params.yaml declares under reports/<task>/ (None: every
    folder, for the embeddings' fixed methods). A folder left behind by a run that
    was since removed from params.yaml (its stage gone from dvc.yaml, its files
    still committed) is not evidence of the current profile."""
    lm, nmt = params.get("lm") or {}, params.get("nmt") or {}
    tagger, nli = params.get("tagger") or {}, params.get("nli") or {}
    attention = params.get("evaluate_attention") or {}
    probe = params.get("probe") or {}

    def pairs(a: list | None, b: list | None) -> set[str]:
        return {f"{x}-{y}" for x in a or [] for y in b or []}

    return {
        "embeddings": None,
        "lm": set(lm.get("runs") or {}),
        "nmt": set(nmt.get("runs") or {}) | {"copy-source"},
        "attention": set(attention.get("runs") or []),
        "probe": set(probe.get("lm_runs") or []) | set(probe.get("vectors") or []),
        "tagging": pairs(tagger.get("data"), tagger.get("heads")),
        "nli": pairs(nli.get("data"), nli.get("models")),
    }


def run_folders(folder: Path, names: set[str] | None) -> list[Path]:
    """The eval.json of every run folder under ``folder`` that ``names`` keeps (all
    where None); the others are logged and left out."""
    paths = sorted(folder.glob("*/eval.json"))
    if names is None:
        return paths
    stale = [p.parent.name for p in paths if p.parent.name not in names]
    if stale:
        log.warning(
            "%s: ignoring %s (not in params.yaml; delete them or declare the runs)",
            folder,
            ", ".join(stale),
        )
    return [p for p in paths if p.parent.name in names]


def _runs(folder: Path, names, schema, items_schema) -> tuple[dict, dict]:
    evals, items = {}, {}
    for p in run_folders(folder, names):
        evals[p.parent.name] = load(p, schema)
        if (q := p.parent / "items.json.gz").exists():
            items[p.parent.name] = load_items(q, items_schema)
    return evals, items


def load_evidence(rep: Path, rule: Rule, margin: float, params: dict) -> Evidence:
    """Every task's committed evaluations and item statistics under ``rep`` (a
    project's reports folder) of the runs ``params`` declares, and the taggers'
    validation scores (train.json)."""
    keep = declared(params)
    ev = Evidence(rule=rule, margin=margin)
    ev.emb, ev.emb_items = _runs(
        rep / "embeddings", keep["embeddings"], EmbeddingEval, EmbeddingItems
    )
    for m, e in ev.emb.items():
        if m in WORD2VEC_METHODS:
            paths = [
                rep / "embeddings" / m / f"seed-{s}" / "train.json" for s in e.seeds
            ]
            ev.emb_train[m] = [load(p, Word2VecTrain) for p in paths if p.exists()]
    ev.accuracy_margin = float(
        params.get("verdicts", {}).get("accuracy_margin", ev.accuracy_margin)
    )
    ev.bias, ev.bias_items = _runs(rep / "bias", None, BiasEval, BiasItems)
    ev.lm, ev.lm_items = _runs(rep / "lm", keep["lm"], LmEval, LmItems)
    ev.probe, ev.probe_items = _runs(
        rep / "probe", keep["probe"], ProbeEval, ProbeItems
    )
    ev.nmt, ev.nmt_items = _runs(rep / "nmt", keep["nmt"], NmtEval, NmtItems)
    ev.attention, ev.attention_items = _runs(
        rep / "attention", keep["attention"], AttentionEval, AttentionItems
    )
    ev.tagging, ev.tag_items = _runs(
        rep / "tagging", keep["tagging"], TaggerEval, TaggerItems
    )
    ev.nli, ev.nli_items = _runs(rep / "nli", keep["nli"], NliEval, NliItems)
    for run, e in ev.tagging.items():
        paths = [rep / "tagging" / run / f"seed-{s}" / "train.json" for s in e.seeds]
        ev.tag_train[run] = [load(p, TaggerTrain) for p in paths if p.exists()]
    return ev


def rule_of(verdicts) -> tuple[Rule, float]:
    """The rule and the equivalence margin of a ``verdicts`` params section."""
    rule = Rule(
        confidence=verdicts.confidence,
        resamples=verdicts.resamples,
        seed=verdicts.seed,
        min_items=verdicts.min_items,
    )
    return rule, verdicts.equivalence_margin


def recompute(project: Path) -> Scorecard:
    """The scorecard of a profile project (``.`` or profiles/full) from its
    params.yaml and committed reports/ alone."""
    from firth.config import load_section

    rule, margin = rule_of(load_section("verdicts", project / "params.yaml"))
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    return scorecard(load_evidence(project / "reports", rule, margin, params))


def lines(card: Scorecard) -> list[str]:
    """The scorecard as text: each finding and each baseline row, one verdict
    each, then the tally."""
    out = []
    for f in card.findings:
        out.append(f"{f.verdict:>14}  {f.claim}")
        out.append(f"{'':>16}{f.summary}")
    for r in card.partial_input:
        t = r.test
        out.append(
            f"{t.verdict:>14}  {r.task}: {r.model} vs {r.baseline}: "
            f"{t.interval(4 if 'bits' in r.unit else 2)} {r.unit}"
        )
    out.append(card.tally)
    return out


def _brief(f: Finding) -> str:
    """A finding's deciding test in a cell: 'difference [interval] (items,
    seeds)', or why it was not run."""
    if not f.tests:
        return f.summary
    t = deciding(f)
    d = _digits(t)
    if t.kind == "threshold":
        span = (
            f"[{t.a.low:.{d}f}, {t.a.high:.{d}f}]"
            if math.isfinite(t.a.low) and math.isfinite(t.a.high)
            else "[interval undefined]"
        )
        return (
            f"{t.metric} {t.a.score:.{d}f} {span} "
            f"against {t.b.score:g} ({t.n:,} items, {t.a.seeds} seed(s))"
        )
    if t.kind == "groups":
        return (
            f"{t.metric}, dirty - clean {t.interval(d)} ({t.n:,} dirty and "
            f"{t.n_other:,} clean items, {t.a.seeds} seed(s))"
        )
    seeds = f"{t.a.seeds} and {t.b.seeds} seeds"
    return f"{t.metric} {t.interval(d)} ({t.n:,} items, {seeds})"


def markdown(card: Scorecard, beside: Scorecard | None = None, names=("", "")) -> str:
    """The findings as a Markdown table (README): each finding's verdict and its
    deciding test, and ``beside``'s verdict and test in two more columns."""
    head = ["finding", f"{names[0]} deciding test", "verdict"]
    if beside is not None:
        head += [f"{names[1]} deciding test", "verdict"]
    rows = []
    others = {f.key: f for f in beside.findings} if beside is not None else {}
    for f in card.findings:
        row = [f.claim, _brief(f), f"**{f.verdict}**"]
        if beside is not None:
            g = others.get(f.key)
            row += [_brief(g), f"**{g.verdict}**"] if g else ["-", "-"]
        rows.append(row)
    out = ["| " + " | ".join(h.strip() for h in head) + " |"]
    out.append("|" + "---|" * len(head))
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def scorecard(ev: Evidence) -> Scorecard:
    found = findings(ev)
    r = ev.rule
    return Scorecard(
        rule={
            "confidence": r.confidence,
            "resamples": r.resamples,
            "seed": r.seed,
            "min_items": r.min_items,
            "equivalence_margin": ev.margin,
            "accuracy_margin": ev.accuracy_margin,
            "text": rule_text(r),
        },
        tally=tally(found),
        findings=found,
        partial_input=partial_input_rows(ev),
    )


HEADER = [
    "finding",
    "reported by",
    "compared",
    "test",
    "scores",
    "difference [interval]",
    "test verdict",
    "finding",
    "evidence in",
]


def _digits(t: Test) -> int:
    return 4 if "bits" in t.metric or t.metric == "Spearman" else 2


def finding_rows(f: Finding) -> list[list[str]]:
    """One row per test of a finding (its claim and verdict on the first)."""
    link = f"→ {f.where}" if f.where else "-"
    if not f.tests:
        return [[f.claim, f.source, f.summary, "-", "-", "-", "-", f.verdict, link]]
    rows = []
    for i, (lab, t) in enumerate(zip(f.labels, f.tests, strict=True)):
        d = _digits(t)
        need = f"; needs ~{t.needs:,} items" if t.needs else ""
        rows.append(
            [
                f.claim if i == 0 else "",
                f.source if i == 0 else "",
                lab,
                f"{t.metric}: {t.design()}",
                f"{t.a.score:.{d}f} vs {t.b.score:.{d}f}",
                t.interval(d) + need,
                t.verdict,
                f.verdict if i == 0 else "",
                link if i == 0 else "",
            ]
        )
    return rows


def sections(card: Scorecard, *, budget_note: str, nli: bool) -> list[Section]:
    """The Scorecard section (the rule, the findings' table and figure) and the
    partial-input section."""
    rows = [row for f in card.findings for row in finding_rows(f)]
    notes = [f"{f.key}: {f.note}" for f in card.findings if f.note]
    intro = (
        f"{card.tally} {budget_note}\n\nThe rule. {card.rule['text']}\n\n"
        + "Notes. "
        + " ".join(notes)
    )
    sec = Section("Scorecard", intro, lead_figures=True)
    sec.tables.append(
        (
            "Known findings of the field, tested (one row per test; a finding with "
            "several tests holds when all hold)",
            (HEADER, rows),
        )
    )
    if png := figure(card.findings):
        sec.figures.append(
            (
                "Each finding's compared scores with their intervals (of a finding "
                "with several tests, the first whose verdict is the finding's), "
                "coloured by verdict: green holds, red does not hold, grey "
                "inconclusive",
                png,
            )
        )
    return [sec, partial_input_section(card.partial_input, nli=nli)]


def _panel(ax, f: Finding, t: Test) -> None:
    colour = COLOURS.get(f.verdict, GREY)
    names = [t.a.name, t.b.name]
    if t.kind == "groups":
        names = [f"dirty ({t.n})", f"clean ({t.n_other})"]
    ests = [t.a, t.b] if t.kind != "threshold" else [t.a]
    ys = list(range(len(ests)))[::-1]
    for y, e in zip(ys, ests, strict=True):
        ax.errorbar(
            e.score,
            y,
            xerr=[[max(e.score - e.low, 0)], [max(e.high - e.score, 0)]],
            fmt="o",
            color=colour,
            capsize=3,
            markersize=4,
        )
    if t.kind == "threshold":
        ax.axvline(t.b.score, color="#333", linestyle="--", linewidth=1)
        names = [t.a.name]
    ax.set_yticks(ys)
    ax.set_yticklabels([n[:18] for n in names[: len(ests)]], fontsize=7)
    ax.set_ylim(-0.8, len(ests) - 0.2)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel(t.metric, fontsize=7)
    ax.set_title(f"{f.key}: {f.verdict}", fontsize=8, color=colour)


def deciding(f: Finding) -> Test:
    """The test a finding's panel draws: the first whose verdict is the
    finding's (the one that decides it), else the first."""
    return next((t for t in f.tests if t.verdict == f.verdict), f.tests[0])


def figure(found: list[Finding]) -> bytes | None:
    """One small panel per tested finding."""
    shown = [f for f in found if f.tests]
    if not shown:
        return None
    cols = min(4, len(shown))
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(
        rows, cols, figsize=(2.7 * cols, 1.7 * rows), squeeze=False
    )
    for ax, f in zip(axes.flat, shown, strict=False):
        _panel(ax, f, deciding(f))
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    return figure_png(fig)
