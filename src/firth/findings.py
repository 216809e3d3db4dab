"""Known findings of the field, each a test on this run's committed evidence.

Every finding is a claim from the literature turned into one or more tests of
firth.inference on the per-item statistics the evaluation stages commit
(firth.evidence): a paired bootstrap over test items with the seeds resampled, and
three outcomes (holds, does not hold, inconclusive). A finding made of several
tests holds when every test holds and does not hold when any does not
(``inference.combine``). A finding whose evidence was not produced says so
(``MISSING``) instead of guessing. Systems are every seed of a model; no test
score chooses anything (the tagger's initialisation is chosen on validation).
"""

from __future__ import annotations

from collections.abc import Callable

from firth.evidence import (
    BLEU_METRIC,
    BPC,
    CHRF_METRIC,
    F1,
    HIT,
    INVALID,
    KILO_WORDS,
    PROBE_ACCURACY,
    SELECTIVITY,
    Evidence,
    NoEvidence,
    analogy_side,
    attention_sides,
    chosen_init,
    hit_side,
    label,
    lm_dirty,
    lm_side,
    lm_systems,
    nmt_dirty,
    nmt_side,
    nmt_sides,
    nmt_systems,
    probe_runs,
    probe_side,
    recover_side,
    similarity_sides,
    speed_sides,
    tag_dirty,
    tag_metric,
    tag_side,
    weat_abs_d_metric,
    weat_sides,
)
from firth.inference import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    Test,
    combine,
    combine_verdicts,
    compare,
    equivalent,
    groups,
    majority,
    noninferior,
    ratio,
    spearman_metric,
    threshold,
)
from firth.results import Record

MISSING = "not run"
ANALOGY = "analogy-google"
SPEARMAN = spearman_metric()

# the report section of each task's evidence
SECTIONS = {
    "emb": "Word embeddings",
    "bias": "Bias in word vectors",
    "lm": "Language models",
    "probe": "Probes",
    "nmt": "Translation",
    "tagging": "Sequence labelling",
}


class Finding(Record):
    """A known finding: its claim, who reported it, the tests behind it, the
    verdict, a one-line summary of the evidence (or why there is none), the report
    section holding it, and a note on how its systems were chosen."""

    key: str
    claim: str
    source: str
    verdict: str
    tests: list[Test] = []
    labels: list[str] = []  # one per test: what it compares
    summary: str
    where: str = ""
    note: str = ""


def _missing(key, claim, source, why, where) -> Finding:
    return Finding(
        key=key, claim=claim, source=source, verdict=MISSING, summary=why, where=where
    )


def _finding(key, claim, source, tests, labels, where, note="", verdict=None):
    parts = [
        f"{lab}: {_cell(t)} ({t.verdict})" for lab, t in zip(labels, tests, strict=True)
    ]
    return Finding(
        key=key,
        claim=claim,
        source=source,
        verdict=verdict or combine(tests),
        tests=tests,
        labels=labels,
        summary="; ".join(parts),
        where=where,
        note=note,
    )


def _cell(t: Test) -> str:
    """'A 1.19 vs B 1.31: -0.12 [-0.13, -0.11]' in the metric's units."""
    digits = 4 if "bits" in t.metric or t.metric == "Spearman" else 2
    a, b = f"{t.a.score:.{digits}f}", f"{t.b.score:.{digits}f}"
    need = f", needs ~{t.needs:,} items" if t.needs else ""
    return f"{a} vs {b}, {t.interval(digits)}{need}"


# -- the findings ----------------------------------------------------------------


def sgns_close_to_ppmi(ev: Evidence) -> Finding:
    key, where = "sgns-ppmi", SECTIONS["emb"]
    claim = (
        "SGNS and PPMI-SVD are close on word similarity (matched window and "
        f"subsampling, each tuned on dev halves; |Spearman difference| < "
        f"{ev.margin:g})"
    )
    src = "Levy, Goldberg and Dagan 2015"
    if not {"sgns", "ppmi-svd"} <= set(ev.emb):
        return _missing(key, claim, src, "needs sgns and ppmi-svd", where)
    tests, labels = [], []
    try:
        if "sgns" not in ev.emb_items:
            raise NoEvidence("no per-item statistics of sgns (evaluate-embeddings)")
        for name in sorted(ev.emb_items["sgns"].similarity):
            (a, b), half = similarity_sides(ev, ["sgns", "ppmi-svd"], name)
            tests.append(equivalent(a, b, SPEARMAN, ev.rule, ev.margin))
            labels.append(f"{name} test half ({a.items} of {half} pairs covered)")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    if not tests:
        return _missing(key, claim, src, "no similarity set was scored", where)
    note = "Equivalence tests (TOST) on each set's test half; settings chosen on dev."
    return _finding(key, claim, src, tests, labels, where, note)


def exclusion_matters(ev: Evidence) -> Finding:
    key, where = "exclusion", SECTIONS["emb"]
    claim = (
        "3CosAdd collapses without excluding the question words (keeps under half "
        "its accuracy)"
    )
    src = "Linzen 2016; Levy and Goldberg 2014"
    if "sgns" not in ev.emb:
        return _missing(key, claim, src, "needs the sgns analogy scores", where)
    try:
        s = analogy_side(ev, "sgns", ANALOGY, "3cosadd", "3cosadd_incl")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    kept = ratio("accuracy kept without exclusion", "lower", 1, 0)
    t = threshold(s, kept, 0.5, ev.rule)
    lab = f"{label('sgns', s)}, {s.items:,} covered questions"
    return _finding(key, claim, src, [t], [lab], where)


def ns_hs_tests(ev: Evidence, arch: str = "sg") -> tuple[list[Test], list[str]]:
    """word2vec's loop with negative sampling against the hierarchical softmax
    (w2v-<arch>-ns, w2v-<arch>-hs): the speed test (paired over the timed blocks)
    first, then a non-inferiority test per benchmark (each similarity set's test
    half, the Google analogies' 3CosAdd). Raises NoEvidence."""
    ns, hs = f"w2v-{arch}-ns", f"w2v-{arch}-hs"
    for m in (ns, hs):
        if m not in ev.emb_items:
            raise NoEvidence(f"no per-item statistics of {m} (evaluate-embeddings)")
    a, b = speed_sides(ev, ns, hs)
    tests = [compare(a, b, KILO_WORDS, ev.rule)]
    labels = [
        f"training speed, {label(ns, a)} against {label(hs, b)}, {a.items} timed "
        "blocks of kept tokens"
    ]
    for name in sorted(ev.emb_items[ns].similarity):
        (a, b), half = similarity_sides(ev, [ns, hs], name)
        tests.append(noninferior(a, b, SPEARMAN, ev.rule, ev.margin))
        labels.append(f"{name} test half ({a.items} of {half} pairs covered)")
    if ANALOGY in ev.emb_items[ns].analogy:
        a = hit_side(ev, ns, ANALOGY, "3cosadd", ns)
        b = hit_side(ev, hs, ANALOGY, "3cosadd", hs)
        if ev.emb_items[ns].analogy[ANALOGY].covered != (
            ev.emb_items[hs].analogy[ANALOGY].covered
        ):
            raise NoEvidence(f"{ns} and {hs} cover different {ANALOGY} questions")
        tests.append(noninferior(a, b, HIT, ev.rule, ev.accuracy_margin))
        labels.append(f"{ANALOGY} 3CosAdd, {a.items:,} covered questions")
    return tests, labels


def ns_hs_verdict(tests: list[Test]) -> tuple[str, str]:
    """The claim's verdict (the speed test and most benchmarks) and the
    benchmarks' majority verdict alone."""
    quality = majority(tests[1:])
    return combine_verdicts([tests[0].verdict, quality]), quality


def sampling_beats_hierarchy(ev: Evidence) -> Finding:
    key, where = "ns-hs", SECTIONS["emb"]
    claim = (
        "Negative sampling trains skip-gram faster than the hierarchical softmax "
        "and gives vectors at least as good on most benchmarks"
    )
    src = "Mikolov et al. 2013b"
    if not {"w2v-sg-ns", "w2v-sg-hs"} <= set(ev.emb):
        return _missing(key, claim, src, "needs w2v-sg-ns and w2v-sg-hs", where)
    try:
        tests, labels = ns_hs_tests(ev, "sg")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    verdict, quality = ns_hs_verdict(tests)
    note = (
        "Both trained by the same loop (firth.embeddings.word2vec), one thread, "
        "timed in the DAG beside whatever stage shares the machine. Speed: a paired "
        "bootstrap over the blocks of each epoch (the same kept tokens for both). "
        "Quality: non-inferiority tests (Spearman margin "
        f"{ev.margin:g}, accuracy margin {ev.accuracy_margin:g} percentage point(s)); "
        "the claim "
        f"needs the speed test and most benchmarks ({quality} here)."
    )
    return _finding(key, claim, src, tests, labels, where, note, verdict=verdict)


def debiasing_is_shallow(ev: Evidence) -> Finding:
    key, where = "debias", SECTIONS["bias"]
    claim = (
        "Hard debiasing lowers the gender WEAT effect, but the bias stays "
        "recoverable above chance"
    )
    src = "Bolukbasi et al. 2016; Gonen and Goldberg 2019"
    if "sgns" not in ev.bias:
        return _missing(key, claim, src, "needs evaluate-bias@sgns", where)
    try:
        after, before, n_tests = weat_sides(ev, "sgns")
        kmeans, svm = (
            recover_side(ev, "sgns", "kmeans"),
            recover_side(ev, "sgns", "svm"),
        )
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    tests = [
        compare(after, before, weat_abs_d_metric(n_tests), ev.rule),
        threshold(kmeans, HIT, 50.0, ev.rule),
        threshold(svm, HIT, 50.0, ev.rule),
    ]
    labels = [
        f"{label('sgns', after)} against the original, {after.items} target words "
        f"of {n_tests} gender WEATs",
        f"k-means on the debiased vectors, {kmeans.items} most biased words",
        f"RBF SVM (cross-validated), {svm.items} most biased words",
    ]
    note = (
        "The WEAT test resamples the target words (the attribute words stay fixed); "
        "the recovery tests resample the most biased words against chance (50%)."
    )
    return _finding(key, claim, src, tests, labels, where, note)


def lstm_beats_kn(ev: Evidence) -> Finding:
    key, where = "lstm-kn", SECTIONS["lm"]
    claim, src = "An LSTM LM beats Kneser-Ney in bits/char", "Jozefowicz et al. 2016"
    fam = lm_systems(ev.lm)
    runs = {ev.lm[r[0]].family: (n, r) for n, r in fam.items()}
    if "lstm" not in runs or "kn" not in runs:
        return _missing(key, claim, src, "needs an lstm and a kn run", where)
    try:
        (na, ra), (nb, rb) = runs["lstm"], runs["kn"]
        a, b = lm_side(ev, na, ra), lm_side(ev, nb, rb)
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    t = compare(a, b, BPC, ev.rule)
    return _finding(key, claim, src, [t], [f"{label(na, a)} vs {label(nb, b)}"], where)


def probes_need_training(ev: Evidence) -> Finding:
    key, where = "probe-selectivity", SECTIONS["probe"]
    claim = (
        "A trained LSTM LM's top layer is more selective for POS than the same "
        "network untrained (linear probe, task minus control accuracy)"
    )
    src = "Hewitt and Liang 2019"
    runs = probe_runs(ev, "lstm")
    if not runs:
        return _missing(key, claim, src, "needs probe-lm of an lstm run", where)
    try:
        a = probe_side(ev, runs, model="trained", probe="linear")
        b = probe_side(ev, runs, model="untrained", probe="linear")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    t = compare(a, b, SELECTIVITY, ev.rule)
    lab = f"{label('lstm trained', a)} vs untrained, {a.items:,} test tokens"
    return _finding(key, claim, src, [t], [lab], where)


def mlp_probes_memorise(ev: Evidence) -> Finding:
    key, where = "probe-mlp", SECTIONS["probe"]
    claim = (
        "An MLP probe reaches higher accuracy but lower selectivity than a linear "
        "probe (trained LSTM LM, top layer)"
    )
    src = "Hewitt and Liang 2019"
    runs = probe_runs(ev, "lstm")
    if not runs:
        return _missing(key, claim, src, "needs probe-lm of an lstm run", where)
    try:
        mlp = probe_side(ev, runs, model="trained", probe="mlp")
        lin = probe_side(ev, runs, model="trained", probe="linear")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    tests = [
        compare(mlp, lin, PROBE_ACCURACY, ev.rule),
        compare(lin, mlp, SELECTIVITY, ev.rule),
    ]
    labels = [
        f"MLP vs linear, accuracy, {mlp.items:,} test tokens",
        "linear vs MLP, selectivity",
    ]
    return _finding(key, claim, src, tests, labels, where)


def _nmt(ev: Evidence) -> dict[str, list[str]]:
    return nmt_systems(ev.nmt)


def _nmt_pick(ev: Evidence, **want) -> tuple[str, list[str]] | None:
    for name, runs in _nmt(ev).items():
        e = ev.nmt[runs[0]]
        if all(getattr(e, k) == v for k, v in want.items()):
            return name, runs
    return None


def attention_beats_bottleneck(ev: Evidence) -> Finding:
    key, where = "attention", SECTIONS["nmt"]
    claim = "Attention beats the fixed-vector encoder-decoder (beam BLEU)"
    src = "Bahdanau et al. 2015"
    att = _nmt_pick(ev, model="bahdanau", pointer=False, coverage=False)
    none = _nmt_pick(ev, model="none")
    if att is None or none is None:
        return _missing(key, claim, src, "needs a bahdanau and a none run", where)
    try:
        a, b = nmt_sides(ev, att[1], none[1], "bleu", (att[0], none[0]))
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    t = compare(a, b, BLEU_METRIC, ev.rule)
    lab = f"{label(att[0], a)} vs {label(none[0], b)}"
    return _finding(key, claim, src, [t], [lab], where)


def attention_is_used(ev: Evidence) -> Finding:
    key, where = "attention-faithful", SECTIONS["nmt"]
    claim = (
        "Permuting a recurrent model's attention changes its translations "
        "(greedy BLEU and chrF drop)"
    )
    src = "Jain and Wallace 2019; Wiegreffe and Pinter 2019"
    att = _nmt_pick(ev, model="bahdanau", pointer=False, coverage=False)
    if att is None:
        return _missing(key, claim, src, "needs a bahdanau run", where)
    runs = [r for r in att[1] if r in ev.attention]
    if not runs:
        why = f"needs evaluate-attention@{att[1][0]} (evaluate_attention.runs)"
        return _missing(key, claim, src, why, where)
    try:
        sides = [
            attention_sides(ev, att[0], runs, "permute", m) for m in ("bleu", "chrf")
        ]
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    tests = [
        compare(a, b, metric, ev.rule)
        for (a, b), metric in zip(sides, (BLEU_METRIC, CHRF_METRIC), strict=True)
    ]
    a = sides[0][0]
    labels = [
        f"{label(att[0], a)}: its attention against a random permutation of it, "
        f"greedy {m}"
        for m in ("BLEU", "chrF")
    ]
    note = (
        "Each decoding step's attention is replaced by a random permutation of "
        "itself over the source, everything else held fixed; the difference is "
        "the size of the change (reports/attention/ has the other interventions "
        "and the gradient x input correlation)."
    )
    return _finding(key, claim, src, tests, labels, where, note)


def pointer_beats_copying(ev: Evidence) -> Finding:
    key, where = "pointer-copy", SECTIONS["nmt"]
    claim = "A pointer-generator beats copying the source (beam BLEU and chrF)"
    src = "See et al. 2017; the copy-source baseline"
    ptr = _nmt_pick(ev, model="bahdanau", pointer=True, coverage=False)
    copy = _nmt_pick(ev, model="copy-source")
    if ptr is None or copy is None:
        return _missing(key, claim, src, "needs a pointer run and copy-source", where)
    tests, labels = [], []
    try:
        for metric, m in (("bleu", BLEU_METRIC), ("chrf", CHRF_METRIC)):
            a, b = nmt_sides(ev, ptr[1], copy[1], metric, (ptr[0], copy[0]))
            tests.append(compare(a, b, m, ev.rule))
            labels.append(f"{m.name}: {label(ptr[0], a)} vs {copy[0]}")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    return _finding(key, claim, src, tests, labels, where)


def source_matters(ev: Evidence) -> Finding:
    key, where = "source", SECTIONS["nmt"]
    claim = "Translation uses the source: every model beats the target-side LM (BLEU)"
    src = "partial-input baseline"
    lm = _nmt_pick(ev, model="target-lm")
    models = {
        n: r
        for n, r in _nmt(ev).items()
        if ev.nmt[r[0]].model not in ("target-lm", "copy-source")
    }
    if lm is None or not models:
        return _missing(key, claim, src, "needs target-lm and a translation run", where)
    tests, labels = [], []
    try:
        for name, runs in sorted(models.items()):
            a, b = nmt_sides(ev, runs, lm[1], "bleu", (name, lm[0]))
            tests.append(compare(a, b, BLEU_METRIC, ev.rule))
            labels.append(f"{label(name, a)} vs {label(lm[0], b)}")
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    held = sum(t.verdict == HOLDS for t in tests)
    note = f"{held} of {len(tests)} translation models beat the target-side LM."
    return _finding(key, claim, src, tests, labels, where, note)


def crf_beats_softmax(ev: Evidence) -> Finding:
    key, where = "crf", SECTIONS["tagging"]
    claim = (
        "A CRF with learned transitions breaks BIO less often than a softmax head "
        "and scores higher entity F1"
    )
    src = "Lample et al. 2016"
    pairs = []
    for data in sorted({e.data for e in ev.tagging.values() if e.bio}):
        heads = {e.head: r for r, e in ev.tagging.items() if e.data == data}
        if "crf" in heads and "softmax" in heads:
            pairs.append((data, heads["crf"], heads["softmax"]))
    if not pairs:
        return _missing(key, claim, src, "needs BIO-tagged crf and softmax runs", where)
    tests, labels = [], []
    try:
        for _data, crf, soft in pairs:
            ic, is_ = chosen_init(ev, crf), chosen_init(ev, soft)
            a, b = tag_side(ev, crf, ic), tag_side(ev, soft, is_)
            for metric in (INVALID, F1):
                tests.append(compare(a, b, metric, ev.rule))
                labels.append(
                    f"{metric.name.split(' %')[0]}: {label(crf, a)} ({ic}) vs "
                    f"{label(soft, b)} ({is_})"
                )
    except NoEvidence as exc:
        return _missing(key, claim, src, str(exc), where)
    note = (
        "Each run's word-embedding initialisation is chosen on validation. A CRF "
        "decoded under BIO constraints (or trained with them) cannot break BIO: "
        "that row is a constraint, shown in the tagging section, not a finding."
    )
    return _finding(key, claim, src, tests, labels, where, note)


def contamination_tests(ev: Evidence) -> list[tuple[str, Test, str]]:
    """Dirty against clean test items of one pre-declared model per task (the
    LSTM, the attention model, each BIO or POS run's CRF with its validation-chosen
    initialisation): (label, test, report section), in task order."""
    out = []
    fam = {ev.lm[r[0]].family: (n, r) for n, r in lm_systems(ev.lm).items()}
    if "lstm" in fam:
        name, runs = fam["lstm"]
        try:
            s = lm_side(ev, name, runs)
            t = groups(s, lm_dirty(ev, runs[0]), BPC, ev.rule)
            lab = f"language model {label(name, s)}, test lines"
            out.append((lab, t, SECTIONS["lm"]))
        except NoEvidence:
            pass
    att = _nmt_pick(ev, model="bahdanau", pointer=False, coverage=False)
    if att is not None:
        try:
            s = nmt_side(ev, att[0], att[1], "bleu")
            t = groups(s, nmt_dirty(ev, att[1][0]), BLEU_METRIC, ev.rule)
            lab = f"translation {label(att[0], s)}, test verses"
            out.append((lab, t, SECTIONS["nmt"]))
        except NoEvidence:
            pass
    for run, e in sorted(ev.tagging.items()):
        if e.head != "crf":
            continue
        try:
            init = chosen_init(ev, run)
            s = tag_side(ev, run, init)
            t = groups(s, tag_dirty(ev, run), tag_metric(e), ev.rule)
            lab = f"tagging {label(run, s)} ({init}), test sentences"
            out.append((lab, t, SECTIONS["tagging"]))
        except NoEvidence:
            pass
    return out


def contamination_inflates(ev: Evidence) -> Finding:
    key, where = "contamination", ""
    claim = "Test items seen in training score higher (contamination inflates)"
    src = "Brown et al. 2020, appendix C"
    tested = contamination_tests(ev)
    if not tested:
        why = "no per-item statistics with dirty flags (the evaluations' items)"
        return _missing(key, claim, src, why, where)
    if not any(t.n for _, t, _ in tested):
        return _missing(key, claim, src, "no test item is flagged dirty", where)
    # the verdict: the evaluation with the most dirty items (a rule that reads no
    # score); the others are shown beside it
    primary = max(range(len(tested)), key=lambda i: tested[i][1].n)
    where = tested[primary][2]
    order = [primary] + [i for i in range(len(tested)) if i != primary]
    tests = [tested[i][1] for i in order]
    labels = [f"{tested[i][0]}, {tested[i][1].n:,} dirty" for i in order]
    note = (
        "The verdict is that of the evaluation with the most dirty test items (the "
        "first listed); the others are shown beside it. Dirty and clean items differ "
        "in more than exposure, so a gap is an association, as in GPT-3's table."
    )
    return _finding(key, claim, src, tests, labels, where, note, tests[0].verdict)


CHECKS: list[Callable[[Evidence], Finding]] = [
    sgns_close_to_ppmi,
    exclusion_matters,
    sampling_beats_hierarchy,
    debiasing_is_shallow,
    lstm_beats_kn,
    probes_need_training,
    mlp_probes_memorise,
    attention_beats_bottleneck,
    attention_is_used,
    pointer_beats_copying,
    source_matters,
    crf_beats_softmax,
    contamination_inflates,
]


def findings(ev: Evidence) -> list[Finding]:
    """Every known finding, tested on the given evidence."""
    return [check(ev) for check in CHECKS]


def tally(found: list[Finding]) -> str:
    """'3 of 8 known findings hold; 4 are inconclusive; 1 does not hold.'"""
    n = {v: sum(f.verdict == v for f in found) for v in (HOLDS, INCONCLUSIVE, FAILS)}
    missing = sum(f.verdict == MISSING for f in found)
    out = f"{n[HOLDS]} of {len(found)} known findings hold on this run"
    parts = []
    if n[INCONCLUSIVE]:
        parts.append(f"{n[INCONCLUSIVE]} inconclusive")
    if n[FAILS]:
        parts.append(f"{n[FAILS]} do not hold")
    if missing:
        parts.append(f"{missing} not run")
    return out + (f" ({', '.join(parts)})." if parts else ".")
