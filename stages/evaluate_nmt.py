"""DVC stage evaluate-nmt@<run>: the test split translated by one trained model of
``nmt.runs``, greedily and with beam search -> reports/nmt/<run>/eval.json (BLEU,
chrF, chrF++ for both, test perplexity), reports/nmt/<run>/eval_detail.json
(sacreBLEU signatures, scores per source-length bucket, attention maps of the
``evaluate_nmt.heatmaps`` verses, best and worst verses) and the translations in
data/nmt-eval/<run>/test.tsv.

``copy-source`` (not a run name) scores the copy-source baseline the same way:
every output is its source.

Every score is also given on the clean and dirty test verses of the contamination
audit (data/audit/parallel/flags.tsv, stage audit-parallel): eval.json's
``contamination`` holds BLEU and chrF on all / dirty / clean verses."""

from __future__ import annotations

import csv
import logging
import time

import torch

from firth import runner
from firth.accel import resolve_device
from firth.audit.scores import read_flags, split_scores
from firth.config import load_section, load_sections
from firth.errors import ConfigError, DataError
from firth.io import atomic_path, write_json
from firth.nmt.config import EvaluateNmt, Nmt
from firth.nmt.data import (
    decode,
    encode,
    encode_extended,
    load_tokenizer,
    make_batch,
    max_lengths,
    pieces,
    read_pairs,
)
from firth.nmt.decode import decode_corpus, greedy
from firth.nmt.evaluate import (
    best_and_worst,
    bucket_scores,
    corpus_scores,
    metrics,
    repeated_trigram_rate,
    source_word_share,
)
from firth.nmt.models import build_model
from firth.nmt.results import NmtEval
from firth.nmt.train import nll, pointer_statistics
from firth.results import parse, save

log = logging.getLogger("evaluate_nmt")

COPY = "copy-source"


def translate_all(model, src, c, ev, device, *, beam: int) -> tuple[list, float]:
    """Token ids of every test output (greedy for beam 1), in input order, and the
    seconds spent."""
    t0 = time.perf_counter()
    out = decode_corpus(
        model,
        src,
        batch=c.eval_batch,
        a=c.max_len_a,
        b=c.max_len_b,
        device=device,
        beam=beam,
        alpha=ev.alpha,
        kind=ev.penalty,
        beta=ev.beta,
    )
    return out, time.perf_counter() - t0


def body(args) -> None:
    params = runner.params_path(args)
    cfg, _ = load_sections("nmt", params, schema=Nmt)
    ev = load_section("evaluate_nmt", params, schema=EvaluateNmt)
    if COPY in cfg.runs:
        raise ConfigError(f"nmt.runs: '{COPY}' is reserved for the baseline")
    if args.run != COPY and args.run not in cfg.runs:
        raise ConfigError(
            f"nmt.runs has no run '{args.run}' (runs: {', '.join(cfg.runs)}, or {COPY})"
        )
    c = cfg.common
    if c.threads:
        torch.set_num_threads(c.threads)
    data = args.root / "data" / "subsampled" / "parallel"
    test = read_pairs(data / "test.tsv")
    result: dict = {"run": args.run, "test_pairs": len(test)}
    detail: dict = {"run": args.run}
    if args.run == COPY:
        outputs = {"greedy": list(test.source), "beam": list(test.source)}
        result["model"] = COPY
    else:
        run = cfg.runs[args.run]
        tok = load_tokenizer(
            args.root / "data" / "tokenizers" / "parallel" / "tokenizer.json"
        )
        weights = args.root / "data" / "nmt" / args.run / "model.pt"
        if not weights.exists():
            raise DataError(f"{weights}: not found (run train-nmt@{args.run} first)")
        device = resolve_device(c.device, key="nmt.common.device")
        model = build_model(
            run.model,
            tok.get_vocab_size(),
            cfg,
            pointer=run.pointer,
            coverage=run.coverage,
        )
        model.load_state_dict(torch.load(weights, weights_only=True))
        model.to(device).eval()
        if run.pointer:  # unknown source spans get copyable ids
            ext = encode_extended(tok, test.source, test.target)
            src, tgt, oov = ext.src, ext.tgt, ext.oov
        else:
            src, tgt = encode(tok, test.source), encode(tok, test.target)
            oov = [()] * len(src)
        t_nll, t_tok = nll(model, src, tgt, batch_tokens=c.batch_tokens, device=device)
        result.update(
            model=run.model,
            **run.model_dump(
                include={"pointer", "coverage", "coverage_loss"}, exclude_defaults=True
            ),
            test_loss=t_nll / t_tok,
            test_perplexity=float(torch.tensor(t_nll / t_tok).exp()),
            beam_width=ev.beam,
            alpha=ev.alpha,
            penalty=ev.penalty,
            beta=ev.beta,
        )
        outputs, seconds = {}, {}
        for name, k in (("greedy", 1), ("beam", ev.beam)):
            ids, seconds[name] = translate_all(model, src, c, ev, device, beam=k)
            outputs[name] = [decode(tok, x, o) for x, o in zip(ids, oov, strict=True)]
            if run.pointer:
                result[f"{name}_pointer"] = pointer_statistics(
                    model, src, ids, batch_tokens=c.batch_tokens, device=device
                )
            log.info(
                "%s: %s decoding of %d verses in %.1f s",
                args.run,
                name,
                len(src),
                seconds[name],
            )
        detail["decode_seconds"] = {k: round(v, 2) for k, v in seconds.items()}
        detail["heatmaps"] = []
        where = {v: i for i, v in enumerate(test.ids)}
        for vid in ev.heatmaps:
            if vid not in where:
                raise ConfigError(
                    f"evaluate_nmt.heatmaps: verse '{vid}' is not in the test split"
                )
            if not model.has_attention:
                continue
            i = where[vid]
            b = make_batch([i], src, None).to(device)
            res = greedy(
                model,
                b.src,
                b.src_mask,
                max_lengths(b.src_mask.sum(1), c.max_len_a, c.max_len_b),
                attention=True,
            )
            detail["heatmaps"].append(
                {
                    "id": vid,
                    "source": [*pieces(tok, src[i], oov[i]), "</s>"],
                    "output": [*pieces(tok, res.tokens[0], oov[i]), "</s>"],
                    "weights": [
                        [round(float(w), 4) for w in row] for row in res.attention[0]
                    ],
                }
            )
    refs = list(test.target)
    dirty = read_flags(
        args.root / "data" / "audit" / "parallel" / "flags.tsv", test.ids
    )
    result["contamination"] = {}
    detail["signatures"] = {}
    detail["buckets"] = {}
    detail["examples"] = {}
    for name, hyps in outputs.items():
        scores, sigs = corpus_scores(hyps, refs)
        result[name] = {
            **scores,
            "repeated_trigrams": round(repeated_trigram_rate(hyps), 6),
            "source_word_share": round(source_word_share(hyps, test.source), 6),
            "mean_words": round(sum(len(h.split()) for h in hyps) / len(hyps), 3),
        }
        detail["signatures"] = sigs
        result["contamination"][name] = {
            metric: split_scores(
                lambda idx, m=scorer, h=hyps: round(
                    m.corpus_score([h[i] for i in idx], [[refs[i] for i in idx]]).score,
                    4,
                ),
                dirty,
            )
            for metric, scorer in metrics().items()
            if metric in ("bleu", "chrf")
        }
        detail["buckets"][name] = bucket_scores(hyps, refs, test.source, ev.buckets)
        detail["examples"][name] = best_and_worst(
            test.ids, test.source, hyps, refs, ev.examples
        )
        log.info(
            "%s %s: BLEU %.2f, chrF %.2f, chrF++ %.2f",
            args.run,
            name,
            scores["bleu"],
            scores["chrf"],
            scores["chrf++"],
        )
    result["reference_repeated_trigrams"] = round(repeated_trigram_rate(refs), 6)
    result["reference_source_word_share"] = round(
        source_word_share(refs, test.source), 6
    )
    rep = args.root / "reports" / "nmt" / args.run
    save(rep / "eval.json", parse(result, NmtEval, f"evaluate-nmt@{args.run} scores"))
    write_json(rep / "eval_detail.json", detail)
    out = args.root / "data" / "nmt-eval" / args.run
    with atomic_path(out) as tmp:
        tmp.mkdir()
        with open(tmp / "test.tsv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter="\t", lineterminator="\n")
            w.writerow(["id", *outputs])
            for i, vid in enumerate(test.ids):
                w.writerow([vid, *(o[i] for o in outputs.values())])


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("run", help=f"a name under nmt.runs in params.yaml, or {COPY}")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
