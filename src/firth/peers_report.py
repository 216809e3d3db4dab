"""The report's "Peers on the same data" section, from benchmarks/results/peers.json
(written by benchmarks/peers.py): Firth's trainers beside the tools the field
already runs (gensim, fastText, KenLM, NLTK, JoeyNMT, OpenNMT-py, flair), same
data, split, tokens and settings, one run on one machine; quality compared by the
scorecard's paired bootstrap."""

from __future__ import annotations

from firth.report import Section

TITLE = "Peers on the same data"


def _f(x, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _vectors(sec: Section, task: dict, notes: list[str]) -> None:
    header = ["tool", "runs", "words/s", "3CosAdd", "WordSim-353", "SimLex-999"]
    rows = [
        [
            f"{e['what']} ({e['version']})",
            str(e["runs"]),
            f"{e['words_per_second']:,.0f}",
            *(
                f"{e[k]:.4f} ± {e[k + '_sd']:.4f}"
                for k in (
                    "analogy_3cosadd",
                    "wordsim353_spearman",
                    "simlex999_spearman",
                )
            ),
        ]
        for e in task["summary"].values()
    ]
    sec.tables.append(("Word vectors: mean ± sd over seeds", (header, rows)))
    header = ["Firth vs peer", "speed ratio", "3CosAdd", "WordSim-353", "SimLex-999"]
    rows = []
    for c in task["comparisons"]:
        t = c["tests"]
        rows.append(
            [
                f"{c['firth']} vs {c['peer']}",
                f"{c['words_per_second_ratio']:.2f}x",
                *(
                    f"{t[n]['outcome']}: {t[n]['firth']:.4f} vs {t[n]['peer']:.4f}"
                    for n in ("analogy", "wordsim353", "simlex999")
                ),
            ]
        )
    sec.tables.append(
        ("Word vectors: Firth against each peer (paired bootstrap)", (header, rows))
    )


def _ngram(sec: Section, task: dict, notes: list[str]) -> None:
    f, k = task["firth"], task.get("kenlm_reads_firth_arpa")
    header = ["model", "build s", "test perplexity", "scoring tokens/s"]
    rows = [
        [
            f"Firth modified Kneser-Ney, order {task['order']}",
            _f(f["build_seconds"]),
            f"{f['perplexity']:.4f}",
            f"{f['tokens_per_second']:,}",
        ]
    ]
    if k:
        rows.append(
            [
                f"the same model as ARPA, read by KenLM {k['kenlm_version']}",
                f"(ARPA written in {f['arpa_seconds']:.3g} s)",
                f"{k['perplexity']:.4f}",
                f"{k['tokens_per_second']:,}",
            ]
        )
    lm = task.get("lmplz")
    if lm:
        rows.append(
            [
                "KenLM lmplz, its own estimate from the same tokens",
                _f(lm["build_seconds"]),
                f"{lm['perplexity']:.4f}",
                "(as KenLM above)",
            ]
        )
    sec.tables.append(
        (
            f"N-gram LM on the test split ({task['test_tokens']:,} tokens)",
            (header, rows),
        )
    )
    if k:
        notes.append(
            "Firth's ARPA file read by KenLM gives Firth's perplexity to 4 significant "
            f"digits: {k['agree_4_significant_digits']} (relative difference "
            f"{k['relative_difference']:.1e})."
        )
    if lm:
        b = lm["bits_per_char"]
        notes.append(
            f"lmplz against Firth, bits per character: {b['equivalence_sentence']} "
            f"(equivalence within {b['equivalent_within']}); n-grams per order, "
            f"Firth {f['ngrams']}, lmplz {lm['ngrams']} (lmplz adds its own <unk>: "
            "Firth's, an ordinary counted word, is respelt <rare> for it)."
        )
    n = task.get("nltk_slice")
    if n:
        notes.append(
            f"NLTK's KneserNeyInterpolated (order {n['order']}, the first "
            f"{n['train_lines']:,} training lines, {n['test_lines']} test lines): "
            f"built in {n['nltk_build_seconds']} s against Firth's "
            f"{n['firth_build_seconds']} s, scored {n['nltk_tokens_per_second']} "
            f"tokens/s, perplexity {n['nltk_perplexity']:.1f} against Firth's "
            f"{n['firth_perplexity']:.1f} ({n['note']})."
        )


NMT_LABEL = {"bahdanau": "GRU + Bahdanau attention", "transformer": "transformer"}
NMT_TOOL = {"firth": "Firth", "joeynmt": "JoeyNMT", "opennmt": "OpenNMT-py"}


def _nmt(sec: Section, task: dict, notes: list[str]) -> None:
    header = [
        "system",
        "runs",
        "train tokens/s",
        "greedy BLEU",
        "beam BLEU",
        "beam chrF",
        "beam sentences/s",
    ]
    rows = []
    for name, e in task.get("summary", {}).items():
        tool, _, model = name.partition("-")
        rows.append(
            [
                f"{NMT_TOOL.get(tool, tool)} {NMT_LABEL.get(model, model)}",
                str(e["runs"]),
                f"{e['train_target_tokens_per_second']:,.0f}",
                *(
                    f"{e[k]:.2f} ± {e[k + '_sd']:.2f}"
                    for k in ("greedy_bleu", "beam_bleu", "beam_chrf")
                ),
                f"{e['beam_sentences_per_second']:,.1f}",
            ]
        )
    if rows:
        sec.tables.append(("Translation (KJV -> WEB test verses)", (header, rows)))
    header = ["model", "peer", "train speed", "decode speed", "beam BLEU", "beam chrF"]
    rows = [
        [
            NMT_LABEL.get(c["model"], c["model"]),
            NMT_TOOL.get(c.get("peer", "joeynmt"), c.get("peer")),
            f"{c['train_tokens_per_second_ratio']:.2f}x",
            f"{c['beam_sentences_per_second_ratio']:.2f}x",
            *(
                f"{c['tests'][k]['outcome']}: {c['tests'][k]['firth']:.2f} vs "
                f"{c['tests'][k]['peer']:.2f}"
                for k in ("beam_bleu", "beam_chrf")
            ),
        ]
        for c in task.get("comparisons", [])
    ]
    if rows:
        sec.tables.append(
            ("Translation: Firth against its peers (paired bootstrap)", (header, rows))
        )
    if "settings" in task:
        notes.append(f"Translation settings: {task['settings']}.")
    if "opennmt" in task:
        notes.append(f"OpenNMT-py: {task['opennmt']['settings']}.")


def _taggers(sec: Section, task: dict, notes: list[str]) -> None:
    header = [
        "data",
        "metric",
        "Firth",
        "flair",
        "outcome",
        "train speed",
        "tag speed",
    ]
    summary = task.get("summary", {})
    rows = []
    for c in task.get("comparisons", []):
        ours, peer = summary[f"firth-{c['data']}"], summary[f"flair-{c['data']}"]
        rows.append(
            [
                c["data"],
                c["metric"],
                f"{ours['score']:.3f} ± {ours['score_sd']:.3f}",
                f"{peer['score']:.3f} ± {peer['score_sd']:.3f}",
                c["outcome"],
                f"{c['train_sentences_per_second_ratio']:.2f}x "
                f"({ours['train_sentences_per_second']:,.0f} vs "
                f"{peer['train_sentences_per_second']:,.0f}/s)",
                f"{c['tag_sentences_per_second_ratio']:.2f}x",
            ]
        )
    if rows:
        sec.tables.append(
            (
                "BiLSTM-CRF taggers: Firth against flair (paired bootstrap)",
                (header, rows),
            )
        )
    if "settings" in task:
        notes.append(f"Tagger settings: {task['settings']}.")


RENDER = {"vectors": _vectors, "ngram": _ngram, "nmt": _nmt, "taggers": _taggers}


def peers_section(result: dict | None) -> Section | None:
    """None when the benchmark has not been run."""
    tasks = (result or {}).get("tasks")
    if not tasks:
        return None
    sec = Section(TITLE)
    sec.intro = (
        "`python benchmarks/peers.py` ran each peer and Firth's own trainer on the "
        "same prepared data, split and tokens at matched settings, side by side on "
        f"this {result['machine']['cpus']}-core machine. Quality differences are "
        f"{result['rule']}: 'Firth ahead', 'peer ahead' or 'inconclusive' (a tie). "
        "Speed ratios are Firth's rate over the peer's."
    )
    notes: list[str] = []
    for name, render in RENDER.items():
        if name not in tasks:
            continue
        render(sec, tasks[name], notes)
        skipped = tasks[name].get("skipped", {})
        notes.extend(f"{tool} not run: {why}" for tool, why in skipped.items())
    ran = [
        f"{name} at {tasks[name]['head_commit'][:7]}"
        for name in RENDER
        if name in tasks and "head_commit" in tasks[name]
    ]
    if ran:
        notes.append(f"Each task is rerun on its own ({', '.join(ran)}).")
    sec.intro = " ".join([sec.intro, *notes])
    return sec
