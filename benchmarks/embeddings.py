"""Benchmark the embedding trainers against gensim on the same corpus, threads and
epochs: words per second, peak memory and quality (analogy 3CosAdd over the 30,000
most frequent words, WordSim-353 and SimLex-999 Spearman), over several seeds.

Each (method, seed) runs in a fresh process so its peak RSS is its own. Settings come
from params.yaml (section ``embeddings``) unless overridden on the command line.

    python benchmarks/embeddings.py                  # all methods, seeds 1 2 3
    python benchmarks/embeddings.py --methods sgns gensim --seeds 1
    python benchmarks/embeddings.py --merge --methods w2v-sg-ns gensim ...

Besides the DAG's methods, gensim's other variants at the same settings:
``gensim-hs`` (skip-gram, hierarchical softmax), ``gensim-cbow`` and
``gensim-cbow-hs`` (CBOW from word2vec.c's CBOW rate, embeddings.word2vec), each
the reference of Firth's own loop w2v-<arch>-<loss> (``ratio_to_gensim_variant``).
With ``--merge`` the rows of methods not run this time are kept from the file
(each row names the command that measured it); ratios pair rows of one command.

Writes benchmarks/results/embeddings.json (per-run rows, per-method mean and
standard deviation, our SGNS against gensim as ratios, and the expected time of the
full text8 profile from the measured words per second).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

from common import in_fresh_process, machine, mean_sd, write_result

ROOT = Path(__file__).resolve().parents[1]
# the data and params a benchmark reads: a profile project (FIRTH_PROJECT, e.g.
# profiles/full, as the make targets set it) or the root's default
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))

TEXT8_TOKENS = 17_005_207  # text8, the full-scale profile (docs/measured.md)
QUALITY = ("analogy_3cosadd", "wordsim353_spearman", "simlex999_spearman")
# gensim's variants (sg, hs) and the Firth method each is the reference of
GENSIM_VARIANTS = {
    "gensim": (True, False),
    "gensim-hs": (True, True),
    "gensim-cbow": (False, False),
    "gensim-cbow-hs": (False, True),
}
REFERENCE_OF = {
    "w2v-sg-ns": "gensim",
    "w2v-sg-hs": "gensim-hs",
    "w2v-cbow-ns": "gensim-cbow",
    "w2v-cbow-hs": "gensim-cbow-hs",
}


def _one(
    method: str, seed: int, corpus: str, params: str, threads: int, device: str, queue
) -> None:
    import torch

    from firth.config import load_section
    from firth.embeddings.analogy import evaluate_analogies, read_analogies
    from firth.embeddings.config import Embeddings
    from firth.embeddings.corpus import load_corpus
    from firth.embeddings.methods import train_gensim, train_method
    from firth.embeddings.similarity import evaluate_pairs, read_pairs

    cfg = load_section("embeddings", params, schema=Embeddings)
    update = {"threads": threads} if threads else {}
    if device:
        update["device"] = device
    if update:
        cfg = cfg.model_copy(update={"common": cfg.common.model_copy(update=update)})
    torch.set_num_threads(cfg.common.threads or torch.get_num_threads())
    c = cfg.common
    data, sentences = load_corpus(
        corpus, min_count=c.min_count, max_sentence_len=c.max_sentence_len
    )
    if method in GENSIM_VARIANTS and method != "gensim":
        sg, hs = GENSIM_VARIANTS[method]
        alpha = None if sg else cfg.word2vec.alpha_cbow
        out = train_gensim(data, sentences, cfg, seed=seed, sg=sg, hs=hs, alpha=alpha)
    else:
        out = train_method(method, data, sentences, cfg, seed=seed, progress=False)
    from firth.query import stage_paths

    raw = stage_paths(PROJECT, "evaluate-embeddings@sgns")["eval"]
    ana = evaluate_analogies(
        out.embedding,
        read_analogies(raw / "analogy-google" / "questions-words.txt"),
        restrict=30000,
    )
    row = {
        "method": method,
        "seed": seed,
        "seconds": round(out.stats["seconds"], 3),
        "words_per_second": round(out.stats["words_per_second"]),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "analogy_3cosadd": round(ana["3cosadd"], 5),
        "analogy_3cosmul": round(ana["3cosmul"], 5),
        "analogy_coverage": round(ana["coverage"], 5),
        "threads": torch.get_num_threads(),
        "device": out.stats.get("device", "cpu"),
        # corpus passes that words_per_second counts (methods.py): one for the
        # count-based methods, whose fitting time is independent of epochs over text
        "epochs": 1 if method in ("glove", "ppmi-svd") else c.epochs,
    }
    if "blocks" in out.stats:  # word2vec's loop: kept (subsampled) tokens per second
        kept = sum(b["kept_tokens"] for b in out.stats["blocks"])
        row["kept_words_per_second"] = round(kept / out.stats["seconds"])
    for name in ("wordsim353", "simlex999"):
        res = evaluate_pairs(out.embedding, read_pairs(raw / name / "pairs.tsv"))
        row[f"{name}_spearman"] = round(res["spearman"], 5)
        row[f"{name}_coverage"] = round(res["coverage"], 5)
    queue.put(row)


def run_one(method, seed, corpus, params, threads, device="") -> dict:
    return in_fresh_process(
        _one,
        method,
        seed,
        corpus,
        params,
        threads,
        device,
        label=f"{method} seed {seed}",
    )


def summarise(rows: list[dict]) -> dict:
    return mean_sd(
        rows, "method", ("words_per_second", "seconds", "peak_rss_mb", *QUALITY)
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=str(PROJECT / "data/subsampled/text/train.txt"))
    p.add_argument("--params", default=str(PROJECT / "params.yaml"))
    p.add_argument(
        "--methods",
        nargs="+",
        default=["sgns", "gensim", "subword", "ppmi-svd", "glove"],
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--threads", type=int, default=0, help="0 = from params")
    p.add_argument(
        "--device", default="", help="cpu | cuda | auto (default: from params)"
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/embeddings.json"))
    p.add_argument(
        "--merge",
        action="store_true",
        help="keep the file's rows of methods not run now (each names its command)",
    )
    args = p.parse_args(argv)
    command = " ".join(["python benchmarks/embeddings.py", *(argv or sys.argv[1:])])

    rows = []
    kept_rows, old = [], {}
    if args.merge and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        kept_rows = [
            {"command": old["command"], **r} if "command" not in r else r
            for r in old["rows"]
            if r["method"] not in args.methods
        ]
    t0 = time.time()
    for seed in args.seeds:
        for method in args.methods:
            row = run_one(
                method, seed, args.corpus, args.params, args.threads, args.device
            )
            row = {"command": command, **row} if args.merge else row
            print(json.dumps(row), flush=True)
            rows.append(row)
    wall = round(time.time() - t0, 1)
    fresh = rows
    rows = kept_rows + rows
    summary = summarise(rows)
    result = {
        "command": command,
        "machine": {**machine(), "processor": platform.processor()},
        "corpus": str(Path(args.corpus).resolve().relative_to(ROOT))
        if Path(args.corpus).resolve().is_relative_to(ROOT)
        else args.corpus,
        "project": str(PROJECT.relative_to(ROOT)) if PROJECT != ROOT else ".",
        "corpus_tokens": len(Path(args.corpus).read_text(encoding="utf-8").split()),
        "corpus_sha256": hashlib.sha256(Path(args.corpus).read_bytes()).hexdigest(),
        "rows": rows,
        "summary": summary,
        "wall_seconds": wall,
    }
    if kept_rows:
        result["merged_from"] = sorted({r["command"] for r in kept_rows})
        result["wall_seconds_of_merged"] = old.get("wall_seconds")
    if "gensim" in summary:
        ref = summary["gensim"]
        ratios = {}
        made_by = {m: {r.get("command", command) for r in rows if r["method"] == m}
                   for m in summary}  # fmt: skip
        for method, entry in summary.items():
            if method == "gensim" or made_by[method] != made_by["gensim"]:
                continue  # ratios within one command's rows only
            ratios[method] = {
                key: round(entry[key] / ref[key], 4) if ref[key] else None
                for key in ("words_per_second", *QUALITY)
            }
        result["ratio_to_gensim"] = ratios
        # a merged run keeps the ratios it could not recompute within one command
        earlier = {
            m: r
            for m, r in old.get("ratio_to_gensim", {}).items()
            if m not in ratios and m in summary
        }
        if earlier:
            result["ratio_to_gensim_earlier"] = {"command": old["command"]} | earlier
        if "sgns" not in ratios and "targets" in old:
            result["targets"] = {"command": old["command"]} | {
                k: v for k, v in old["targets"].items() if k != "command"
            }
        if "sgns" in ratios:
            r = ratios["sgns"]
            result["targets"] = {
                "sgns_quality_at_least_0.9x": all((r[k] or 0) >= 0.9 for k in QUALITY),
                "sgns_speed_at_least_0.5x": (r["words_per_second"] or 0) >= 0.5,
            }
    now = summarise(fresh)
    variant = {}
    for firth_method, ref in REFERENCE_OF.items():
        if firth_method in now and ref in now:
            a, b = now[firth_method], now[ref]
            variant[firth_method] = {"reference": ref} | {
                key: round(a[key] / b[key], 4) if b[key] else None
                for key in ("words_per_second", *QUALITY)
            }
    if variant:
        result["ratio_to_gensim_variant"] = variant
    for tool, ns, hs in (
        ("firth sg", "w2v-sg-ns", "w2v-sg-hs"),
        ("firth cbow", "w2v-cbow-ns", "w2v-cbow-hs"),
        ("gensim sg", "gensim", "gensim-hs"),
        ("gensim cbow", "gensim-cbow", "gensim-cbow-hs"),
    ):
        if ns in now and hs in now:
            result.setdefault("negative_sampling_over_hs", {})[tool] = {
                key: round(now[ns][key] / now[hs][key], 4) if now[hs][key] else None
                for key in ("words_per_second", *QUALITY)
            }
    result["text8_expected_cpu_seconds"] = {
        m: round(
            TEXT8_TOKENS
            * next(r["epochs"] for r in rows if r["method"] == m)
            / e["words_per_second"]
        )
        for m, e in summary.items()
    }
    write_result(args.out, result)
    print(json.dumps({k: result[k] for k in result if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
