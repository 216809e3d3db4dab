"""Translate new sentences with a trained run of ``nmt.runs``, the way its
evaluation translates the test split: the same preprocessing (normalize), the
params' beam settings (``evaluate_nmt``: beam, alpha, penalty, beta; beam 1 is
greedy), a pointer run copying unknown source spans, and the attention weights of
a model that has attention, with the run's attention test beside them (as the
report's heatmap captions)."""

from __future__ import annotations

import threading
from pathlib import Path

from firth.config import load_section, load_sections
from firth.errors import ConfigError, FirthError
from firth.query import NotTrained, loaded, stage_paths


def translate(
    root: Path,
    params: Path,
    name: str,
    lines: list[str],
    *,
    beam: int | None = None,
    attention: bool = False,
) -> list[dict]:
    """[{source, output, alignment, copy, faithfulness, attention_note}] per
    line; ``alignment`` (with ``attention``, for a model with attention): the
    source and output pieces and the weights [output][source] of greedy
    decoding, as the report's heatmaps, with the run's attention test beside
    them: ``faithfulness`` its numbers (``attention_test``), ``attention_note``
    the sentence `firth serve` and `firth translate` show."""
    from firth.nmt.config import EvaluateNmt, Nmt
    from firth.nmt.data import Pairs, decode
    from firth.nmt.stage import Translator, encode_split, select
    from firth.prepare.normalize import normalize

    cfg, _ = load_sections("nmt", params, schema=Nmt)
    ev = load_section("evaluate_nmt", params, schema=EvaluateNmt)
    run = select(cfg, name)
    paths = stage_paths(root, f"train-nmt@{name}")
    for path, target in (
        (paths["tokenizer"] / "tokenizer.json", "tokenizer-parallel"),
        (paths["out"] / "model.pt", f"train-nmt@{name}"),
    ):
        if not path.exists():
            raise NotTrained(f"{name} is not trained yet: dvc repro {target}")
    sources = [normalize(line) for line in lines]
    keep = [i for i, s in enumerate(sources) if s]
    rows = [
        {
            "source": s,
            "output": "",
            "alignment": None,
            "copy": None,
            "faithfulness": None,
            "attention_note": None,
        }
        for s in sources
    ]
    if not keep:
        return rows
    kept = [sources[i] for i in keep]
    pairs = Pairs([str(i) for i in keep], kept, kept)
    if beam is not None and beam < 1:
        raise ConfigError(f"beam: {beam}; a beam is at least 1 (1 is greedy)")
    files = [paths["tokenizer"] / "tokenizer.json", paths["out"] / "model.pt"]
    key = ("nmt", str(files[1].resolve()), cfg.model_dump_json(), ev.model_dump_json())
    # loaded once per server (firth.query.loaded); a request's lines are its own
    # test split, so one request at a time uses the translator
    translator, lock = loaded(
        key,
        files,
        lambda: (
            Translator(
                cfg,
                ev,
                name,
                run,
                pairs,
                model=paths["out"],
                tokenizer=paths["tokenizer"],
            ),
            threading.Lock(),
        ),
    )
    with lock:
        translator.test = encode_split(translator.tok, pairs, run.pointer)
        longest = longest_source(translator.model, cfg)
        for j, i in enumerate(keep):
            n = len(translator.test.src[j]) + 1  # and </s>
            if longest is not None and n > longest:
                raise ConfigError(
                    f"line {i + 1}: {n} pieces; the {name} model reads at most "
                    f"{longest} (its position table and the output length it allows)"
                )
        ids, _ = translator.translate(ev.beam if beam is None else beam)
        oov = translator.test.oov
        test = attention_test(root, name) if attention else None
        note = attention_note(test) if attention else None
        for j, i in enumerate(keep):
            rows[i]["output"] = decode(translator.tok, ids[j], oov[j])
            if attention and translator.model.has_attention:
                rows[i]["alignment"] = translator.heatmap(j, str(i))
                rows[i]["faithfulness"] = test
                rows[i]["attention_note"] = note
            if attention and run.pointer:
                rows[i]["copy"] = copy_shares(translator, ids, j)
    return rows


def attention_test(root: Path, name: str) -> dict | None:
    """What the run's attention test found (evaluate-attention@``name``'s
    eval.json, firth.nmt.faithfulness): on its test verses, greedy BLEU and chrF
    with the model's own attention and, per intervention (a permutation of it,
    uniform, without its top position), the share of teacher-forced next tokens
    that change, the mean total variation and the greedy scores; Kendall's tau
    with gradient x input. None where the run has no such stage
    (evaluate_attention.runs) or it has not run."""
    from firth.nmt.results import AttentionEval
    from firth.results import load

    try:
        folder = stage_paths(root, f"evaluate-attention@{name}")["reports"]
    except FirthError:
        return None
    if not (folder / "eval.json").exists():
        return None
    e = load(folder / "eval.json", AttentionEval)
    return {
        "report": (folder / "eval.json").relative_to(root).as_posix(),
        "test_pairs": e.test_pairs,
        "original": e.original,
        "interventions": {k: v.model_dump() for k, v in e.interventions.items()},
        "mean_tau": e.mean_tau,
        "tau_sentences": e.tau_sentences,
    }


def attention_note(test: dict | None) -> str:
    """``attention_test``'s result in one sentence, as `firth serve` and
    `firth translate --attention` show it beside the heatmap."""
    if test is None:
        return (
            "no attention test for this run (evaluate_attention.runs): whether its "
            "outputs depend on these weights is not measured"
        )
    out = (
        f"attention test ({test['report']}, {test['test_pairs']:,} test verses): "
        f"greedy BLEU {test['original']['bleu']:.1f} with its own attention"
    )
    for name, what in (
        ("permute", "a random permutation of it"),
        ("uniform", "uniform attention"),
        ("drop-max", "without its most-attended token"),
    ):
        i = test["interventions"].get(name)
        if i is not None:
            out += (
                f"; {what} {i['bleu']:.1f} ({100 * i['changed_share']:.1f}% of "
                "teacher-forced next tokens changed, mean total variation "
                f"{i['mean_tv']:.2f})"
            )
    if test["mean_tau"] is not None:
        out += (
            f"; Kendall tau with gradient x input {test['mean_tau']:.2f} (first "
            f"{test['tau_sentences']} verses)"
        )
    return out


def longest_source(model, cfg) -> int | None:
    """The most source pieces a model with a position table can translate: its
    table must hold the source and the longest output decoding allows
    (``max_len_a`` x source + ``max_len_b``); None for a recurrent model."""
    from firth.nmt.models.transformer import SinusoidalPositions

    tables = [
        m.pe.shape[0] for m in model.modules() if isinstance(m, SinusoidalPositions)
    ]
    if not tables:
        return None
    table, c = min(tables), cfg.common
    if c.max_len_a <= 0:
        return table
    return min(table, int((table - c.max_len_b) / c.max_len_a))


def copy_shares(translator, ids: list[list[int]], j: int) -> dict:
    """A pointer-generator's output ``ids[j]`` (and </s>) with, per token, the share
    of its probability that came from copying the source (teacher-forced over the
    output, as the evaluation's pointer statistics)."""
    import torch

    from firth.nmt.data import make_batch, pieces

    tok, test = translator.tok, translator.test
    b = make_batch([j], test.src, ids).to(translator.device)
    with torch.no_grad():
        _, share = translator.model.copy_parts(b.src, b.src_mask, b.tgt_in, b.tgt_out)
    return {
        "pieces": [*pieces(tok, ids[j], test.oov[j]), "</s>"],
        "copy_share": [round(float(x), 4) for x in share[0]],
    }
