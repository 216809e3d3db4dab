"""Known findings of the field, checked on this run's committed metrics.

Each finding is a claim from the literature that the workbench can test; its
verdict says whether it holds at the profile's budget (the default profile trains
small models on a subsample, so some findings need the full profile to show). A
finding whose evidence was not produced says so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from firth.embeddings.results import EmbeddingEval
from firth.formatting import num
from firth.lm.results import LmEval
from firth.nmt.results import NmtEval
from firth.report import Section
from firth.tagging.results import TaggerEval

HOLDS, FAILS, MISSING = "holds", "does not hold", "not run"


@dataclass(frozen=True)
class Finding:
    claim: str
    source: str  # who reported it
    evidence: str  # the numbers, or why there are none
    verdict: str  # HOLDS | FAILS | MISSING
    where: str = ""  # the report section holding the evidence


# the report section of each task's evidence
SECTIONS = {
    "emb": "Word embeddings",
    "lm": "Language models",
    "nmt": "Translation",
    "tagging": "Sequence labelling",
}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def lstm_beats_kn(lm: dict[str, LmEval]) -> Finding:
    claim, src = "An LSTM LM beats Kneser-Ney in bits/char", "Jozefowicz et al. 2016"
    lstm = [e for e in lm.values() if e.family == "lstm"]
    kn = [e for e in lm.values() if e.family == "kn"]
    if not lstm or not kn:
        return Finding(claim, src, "needs an lstm and a kn run", MISSING)
    b_lstm = [e.test.bits_per_char for e in lstm]
    b_kn = _mean([e.test.bits_per_char for e in kn])
    ok = max(b_lstm) < b_kn
    evidence = (
        f"LSTM {num(_mean(b_lstm))} bits/char (worst of {len(b_lstm)} seeds "
        f"{num(max(b_lstm))}) against KN {num(b_kn)}"
    )
    return Finding(claim, src, evidence, HOLDS if ok else FAILS)


def attention_beats_bottleneck(nmt: dict[str, NmtEval]) -> Finding:
    claim = "Attention beats the fixed-vector encoder-decoder (BLEU)"
    src = "Bahdanau et al. 2015"
    att = [e for e in nmt.values() if e.model == "bahdanau" and not e.pointer]
    none = [e for e in nmt.values() if e.model == "none"]
    if not att or not none:
        return Finding(claim, src, "needs a bahdanau and a none run", MISSING)
    a, n = att[0].beam.bleu, none[0].beam.bleu
    return Finding(
        claim,
        src,
        f"beam BLEU {num(a, 2)} ({att[0].run}) against {num(n, 2)} ({none[0].run})",
        HOLDS if a > n else FAILS,
    )


def pointer_beats_copying(nmt: dict[str, NmtEval]) -> Finding:
    claim = "A pointer-generator beats copying the source (BLEU and chrF)"
    src = "See et al. 2017; the copy-source baseline"
    ptr = [e for e in nmt.values() if e.pointer]
    if not ptr or "copy-source" not in nmt:
        return Finding(claim, src, "needs a pointer run and copy-source", MISSING)
    p, copy = ptr[0].beam, nmt["copy-source"].greedy
    ok = p.bleu > copy.bleu and p.chrf > copy.chrf
    return Finding(
        claim,
        src,
        f"{ptr[0].run} BLEU {num(p.bleu, 2)} / chrF {num(p.chrf, 2)} against "
        f"copy-source {num(copy.bleu, 2)} / {num(copy.chrf, 2)}",
        HOLDS if ok else FAILS,
    )


def source_matters(nmt: dict[str, NmtEval]) -> Finding:
    claim = "Translation uses the source: every model beats the target-side LM"
    src = "partial-input baseline"
    lm = [e for e in nmt.values() if e.model == "target-lm"]
    full = [e for e in nmt.values() if e.model not in ("target-lm", "copy-source")]
    if not lm or not full:
        return Finding(claim, src, "needs target-lm and a translation run", MISSING)
    worst = min(full, key=lambda e: e.beam.bleu)
    t = lm[0].beam.bleu
    return Finding(
        claim,
        src,
        f"weakest model {worst.run} BLEU {num(worst.beam.bleu, 2)} against "
        f"target-lm {num(t, 2)}",
        HOLDS if worst.beam.bleu > t else FAILS,
    )


def crf_keeps_bio(tagging: dict[str, TaggerEval]) -> Finding:
    claim = "A CRF head never predicts invalid BIO; a softmax head does"
    src = "Lample et al. 2016"
    crf = [e for e in tagging.values() if e.head == "crf" and e.bio]
    soft = [e for e in tagging.values() if e.head == "softmax" and e.bio]
    if not crf or not soft:
        return Finding(claim, src, "needs BIO-tagged crf and softmax runs", MISSING)
    c = max(m.invalid_bio_share for e in crf for m in e.models)
    s = _mean([m.invalid_bio_share for e in soft for m in e.models])
    return Finding(
        claim,
        src,
        f"invalid-BIO share of predicted test sentences: CRF worst {100 * c:.2f}%, "
        f"softmax mean {100 * s:.2f}%",
        HOLDS if c == 0 and s > 0 else FAILS,
    )


def _wordsim(e: EmbeddingEval | None) -> float | None:
    sim = e.summary.similarity.get("wordsim353") if e else None
    return sim.spearman.mean if sim else None


def sgns_close_to_ppmi(emb: dict[str, EmbeddingEval]) -> Finding:
    claim = "SGNS and PPMI-SVD are close (WordSim-353 within 0.05 Spearman)"
    src = "Levy, Goldberg and Dagan 2015"
    a, b = _wordsim(emb.get("sgns")), _wordsim(emb.get("ppmi-svd"))
    if a is None or b is None:
        return Finding(claim, src, "needs sgns and ppmi-svd", MISSING)
    return Finding(
        claim,
        src,
        f"SGNS {num(a, 3)} against PPMI-SVD {num(b, 3)}",
        HOLDS if abs(a - b) <= 0.05 else FAILS,
    )


def exclusion_matters(emb: dict[str, EmbeddingEval]) -> Finding:
    claim = "3CosAdd collapses without excluding the question words"
    src = "Linzen 2016; Levy and Goldberg 2014"
    e = emb.get("sgns")
    top = e.summary.analogy_at("top") if e else None
    excl, incl = (top.cos_add.mean, top.cos_add_incl.mean) if top else (None, None)
    if excl is None or incl is None:
        return Finding(claim, src, "needs the sgns analogy scores", MISSING)
    return Finding(
        claim,
        src,
        f"SGNS 3CosAdd {num(excl)} with exclusion, {num(incl)} without",
        HOLDS if incl < 0.5 * excl else FAILS,
    )


def contamination_inflates(tagging: dict[str, TaggerEval]) -> Finding:
    claim = "Test items seen in training score higher (contamination inflates)"
    src = "Brown et al. 2020, appendix C"
    gaps = []
    for e in tagging.values():
        for init, c in e.contamination.items():
            if c.n_dirty and c.dirty is not None and c.clean is not None:
                gaps.append((e.run, init, c.dirty - c.clean, c.n_dirty))
    if not gaps:
        return Finding(claim, src, "no tagger test sentence is in training", MISSING)
    run, init, gap, n = max(gaps, key=lambda g: g[3])
    return Finding(
        claim,
        src,
        f"{run} ({init}): dirty minus clean {100 * gap:+.1f} points over {n} dirty "
        "test sentences",
        HOLDS if gap > 0 else FAILS,
    )


CHECKS: list[tuple[str, Callable[..., Finding]]] = [
    ("emb", sgns_close_to_ppmi),
    ("emb", exclusion_matters),
    ("lm", lstm_beats_kn),
    ("nmt", attention_beats_bottleneck),
    ("nmt", pointer_beats_copying),
    ("nmt", source_matters),
    ("tagging", crf_keeps_bio),
    ("tagging", contamination_inflates),
]


def findings(
    *,
    emb: dict[str, EmbeddingEval],
    lm: dict[str, LmEval],
    nmt: dict[str, NmtEval],
    tagging: dict[str, TaggerEval],
) -> list[Finding]:
    """Every known finding, checked on the given eval.json dicts (by run name)."""
    given = {"emb": emb, "lm": lm, "nmt": nmt, "tagging": tagging}
    return [replace(check(given[task]), where=SECTIONS[task]) for task, check in CHECKS]


def scorecard(
    found: list[Finding], *, budget_note: str, baselines: Section | None = None
) -> Section:
    """The report's opening section: every known finding with its verdict and a
    link to the section holding its evidence, then each task's best model
    against its partial-input baselines (``baselines``: firth.partial_input's
    section)."""
    rows = [
        [f.claim, f.source, f.evidence, f.verdict, f"→ {f.where}" if f.where else "-"]
        for f in found
    ]
    held = sum(f.verdict == HOLDS for f in found)
    intro = f"{held} of {len(found)} known findings hold on this run. {budget_note}"
    if baselines is not None:
        intro += "\n\n" + baselines.intro
    sec = Section("Scorecard", intro)
    header = ["finding", "reported by", "evidence", "verdict", "evidence in"]
    sec.tables.append(("Known findings of the field at this budget", (header, rows)))
    if baselines is not None:
        sec.tables += baselines.tables
    return sec
