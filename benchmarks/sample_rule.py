"""What the subsampling rule buys: each method trained under both of
``embeddings.common.sample_rule`` (word2vec.c's min(1, (sqrt(f/t) + 1) t/f) and the
paper's min(1, sqrt(t/f))) at the same seeds, beside gensim's variants (which keep
word2vec.c's rule), on the default's training text.

Reports quality (3CosAdd over the 30,000 most frequent words, WordSim-353 and
SimLex-999 Spearman, as benchmarks/embeddings.py measures it) and the kept tokens per
epoch; per method the mean over seeds under each rule, the difference word2vec -
paper, and each rule's ratio to the gensim variant of the same arch and loss. Words
per second are recorded but are not the point: measure speed with
benchmarks/embeddings.py on a quiet machine.

    python benchmarks/sample_rule.py           # w2v-sg-ns w2v-cbow-ns sgns, seeds 1 2
    python benchmarks/sample_rule.py --methods w2v-sg-hs --seeds 1 2 3

Writes benchmarks/results/sample_rule.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml
from common import machine, write_result
from embeddings import GENSIM_VARIANTS, PROJECT, QUALITY, REFERENCE_OF, ROOT, run_one

RULES = ("word2vec", "paper")
REFERENCE = {**REFERENCE_OF, "sgns": "gensim", "subword": "gensim"}


def params_with(rule: str, base: Path, where: Path) -> Path:
    """A copy of ``base`` whose embeddings.common.sample_rule is ``rule``."""
    params = yaml.safe_load(base.read_text(encoding="utf-8"))
    params["embeddings"]["common"]["sample_rule"] = rule
    out = where / f"params-{rule}.yaml"
    out.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=str(PROJECT / "data/subsampled/text/train.txt"))
    p.add_argument("--params", default=str(PROJECT / "params.yaml"))
    p.add_argument("--methods", nargs="+", default=["w2v-sg-ns", "w2v-cbow-ns", "sgns"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/sample_rule.json"))
    args = p.parse_args(argv)
    command = " ".join(["python benchmarks/sample_rule.py", *(argv or sys.argv[1:])])
    refs = sorted({REFERENCE[m] for m in args.methods if m in REFERENCE})
    unknown = [m for m in args.methods if m in GENSIM_VARIANTS]
    if unknown:
        p.error(f"{unknown}: gensim keeps word2vec.c's rule; it runs as a reference")

    rows, t0 = [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            rule: params_with(rule, Path(args.params), Path(tmp)) for rule in RULES
        }
        for seed in args.seeds:
            runs = [(m, rule) for m in args.methods for rule in RULES]
            runs += [(ref, "word2vec") for ref in refs]
            for method, rule in runs:
                row = run_one(method, seed, args.corpus, str(files[rule]), args.threads)
                row["sample_rule"] = rule
                print(json.dumps(row), flush=True)
                rows.append(row)

    def mean(method: str, rule: str, key: str) -> float:
        values = [
            r[key] for r in rows if r["method"] == method and r["sample_rule"] == rule
        ]
        return statistics.mean(values)

    summary = {}
    for method in args.methods:
        entry = {}
        for rule in RULES:
            entry[rule] = {
                key: round(mean(method, rule, key), 5)
                for key in (*QUALITY, "words_per_second")
            }
            kept = [
                r.get("kept_words_per_second", 0) * r["seconds"] / r["epochs"]
                for r in rows
                if r["method"] == method and r["sample_rule"] == rule
            ]
            if all(kept):
                entry[rule]["kept_tokens_per_epoch"] = round(statistics.mean(kept))
        entry["word2vec_minus_paper"] = {
            key: round(entry["word2vec"][key] - entry["paper"][key], 5)
            for key in QUALITY
        }
        ref = REFERENCE.get(method)
        if ref:
            entry["reference"] = ref
            for rule in RULES:
                entry[f"ratio_to_{ref}_{rule}"] = {
                    key: round(entry[rule][key] / mean(ref, "word2vec", key), 4)
                    for key in QUALITY
                }
        summary[method] = entry
    for ref in refs:
        summary[ref] = {
            key: round(mean(ref, "word2vec", key), 5)
            for key in (*QUALITY, "words_per_second")
        }
    result = {
        "command": command,
        "machine": machine(),
        "note": "quality is deterministic per seed; words/s beside whatever else ran",
        "corpus": str(Path(args.corpus).resolve()),
        "seeds": args.seeds,
        "rows": rows,
        "summary": summary,
        "wall_seconds": round(time.time() - t0, 1),
    }
    write_result(args.out, result)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
