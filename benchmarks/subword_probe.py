"""Subword SGNS settings on the validation halves only: Firth's subword vectors
trail fastText's on 3CosAdd and SimLex-999 (benchmarks/results/peers.json), and
fastText's code differs from the paper's formula that Firth follows: it averages
a word's n-gram rows (embeddings.subword.combine: mean) where the paper sums them.
Each setting is trained on the default's corpus for each seed (each in a fresh
process) and scored by the criterion embeddings.tune chooses by: the mean Spearman
on the dev halves of WordSim-353 and SimLex-999 (firth.embeddings.tuning). The
test halves and the analogies are not read.

    FIRTH_PROJECT=/path/to/trained/clone python benchmarks/subword_probe.py
    python benchmarks/subword_probe.py --set combine=mean --set combine=mean,lr=0.1
    python benchmarks/subword_probe.py --set default \
        --set kernel=online,combine=mean,lr=0.05 --out .../subword-online.json
    python benchmarks/subword_probe.py --set cds=0.75 --set cds=0.5 \
        --out .../subword-cds.json

Writes benchmarks/results/probes/subword-settings.json (or --out)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from common import head_commit, in_fresh_process, machine, speed_probe, write_result

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))


def parse_setting(text: str) -> dict:
    """'combine=mean,lr=0.1' -> {'combine': 'mean', 'lr': 0.1}; {} for 'default'."""
    if text == "default":
        return {}
    out: dict = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key not in ("combine", "lr", "kernel", "cds"):
            raise SystemExit(
                f"--set {text!r}: expected combine=sum|mean, kernel=K, lr=X "
                "and/or cds=X"
            )
        out[key] = float(value) if key in ("lr", "cds") else value
    return out


def _one(setting: dict, seed: int, threads: int, queue) -> None:
    import torch

    from firth.config import load_section
    from firth.embeddings.config import Embeddings
    from firth.embeddings.corpus import load_corpus
    from firth.embeddings.methods import train_method
    from firth.embeddings.similarity import read_pairs
    from firth.embeddings.tuning import DEV, criterion, dev_scores, halves
    from firth.query import stage_paths

    torch.set_num_threads(threads)
    cfg = load_section("embeddings", PROJECT / "params.yaml", schema=Embeddings)
    common = cfg.common.model_copy(update={"threads": threads, "device": "cpu"})
    sub = cfg.subword.model_copy(update=setting)
    cfg = cfg.model_copy(update={"common": common, "subword": sub})
    data, sentences = load_corpus(
        PROJECT / "data/subsampled/text/train.txt",
        min_count=common.min_count,
        max_sentence_len=common.max_sentence_len,
    )
    out = train_method("subword", data, sentences, cfg, seed=seed, progress=False)
    raw = stage_paths(PROJECT, "evaluate-embeddings@sgns")["eval"]
    dev = {
        name: halves(read_pairs(raw / name / "pairs.tsv"))[DEV]
        for name in ("wordsim353", "simlex999")
    }
    emb = out.embedding
    scores = dev_scores(list(emb.words), emb.matrix, dev)
    queue.put(
        {
            "setting": setting or "default",
            "combine": sub.combine,
            "kernel": sub.kernel,
            "lr": sub.lr,
            "seed": seed,
            "seconds": round(out.stats["seconds"], 2),
            "dev_spearman": scores,
            "dev_mean": round(criterion(scores), 5),
        }
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--set",
        action="append",
        dest="settings",
        help="a setting to try (repeatable): combine=..., kernel=..., lr=..., cds=..., "
        "or default",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[13, 14])
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument(
        "--out",
        default=str(ROOT / "benchmarks/results/probes/subword-settings.json"),
    )
    args = p.parse_args(argv)
    texts = args.settings or ["default", "combine=mean", "combine=mean,lr=0.1"]
    probe = speed_probe()
    rows = []
    for text in texts:
        for seed in args.seeds:
            row = in_fresh_process(
                _one, parse_setting(text), seed, args.threads, label=f"{text} {seed}"
            )
            row["setting"] = text
            print(row, flush=True)
            rows.append(row)
    summary = {}
    for text in texts:
        means = [r["dev_mean"] for r in rows if r["setting"] == text]
        summary[text] = {
            "dev_mean": round(statistics.fmean(means), 5),
            "dev_mean_sd": round(statistics.stdev(means), 5) if len(means) > 1 else 0,
            "seeds": len(means),
        }
    chosen = max(texts, key=lambda t: summary[t]["dev_mean"])
    write_result(
        args.out,
        {
            "command": " ".join(
                [
                    "python benchmarks/subword_probe.py",
                    *(argv if argv is not None else sys.argv[1:]),
                ]
            ),
            "head_commit": head_commit(ROOT),
            "project": str(PROJECT),
            "machine": machine(),
            "speed_probe_before": probe,
            "criterion": "mean Spearman on the dev halves of WordSim-353 and "
            "SimLex-999 (firth.embeddings.tuning), averaged over seeds",
            "rows": rows,
            "summary": summary,
            "chosen_on_dev": chosen,
            "speed_probe_after": speed_probe(),
        },
    )
    print(summary, "chosen:", chosen)


if __name__ == "__main__":
    main()
