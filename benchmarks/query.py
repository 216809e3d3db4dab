"""Throughput of the query commands (`firth translate`, `tag`, `score`,
`neighbours`) on a profile's trained models, through the same functions the
commands and `firth serve` call, model loading excluded:

- translate: test sentences per second, greedy and with the params' beam, for each
  trained run of nmt.runs (the first ``--sentences`` of the test split);
- tag: test sentences per second for each trained tagger run (its first seed);
- score: tokens per second of each trained language model over the test text;
- neighbours: words per second (10 neighbours each) for each trained embedding
  method's first seed.

Each timing is the fastest of ``--repeat`` passes, in one process per task.

    python benchmarks/query.py          # the default profile (after make run)
    FIRTH_PROJECT=profiles/full python benchmarks/query.py

Writes benchmarks/results/query.json (or --out).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml
from common import head_commit, in_fresh_process, machine, repeat_seconds, write_result

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))
sys.path.insert(0, str(ROOT / "src"))


def _best(fn, repeat: int) -> float:
    return min(repeat_seconds(fn, repeat))


def _translate(run: str, n: int, repeat: int, queue) -> None:
    from firth.config import load_section, load_sections
    from firth.nmt.config import EvaluateNmt, Nmt
    from firth.nmt.data import Pairs, read_pairs
    from firth.nmt.stage import Translator, select
    from firth.query import stage_paths

    params = PROJECT / "params.yaml"
    cfg, _ = load_sections("nmt", params, schema=Nmt)
    ev = load_section("evaluate_nmt", params, schema=EvaluateNmt)
    test = read_pairs(stage_paths(PROJECT, f"evaluate-nmt@{run}")["test"])
    src = test.source[:n]
    paths = stage_paths(PROJECT, f"train-nmt@{run}")
    tr = Translator(
        cfg,
        ev,
        run,
        select(cfg, run),
        Pairs(test.ids[:n], src, src),
        model=paths["out"],
        tokenizer=paths["tokenizer"],
    )
    row = {"task": "translate", "run": run, "sentences": len(src)}
    for name, beam in (("greedy", 1), ("beam", ev.beam)):
        seconds = _best(lambda b=beam: tr.translate(b), repeat)
        row[f"{name}_sentences_per_second"] = round(len(src) / seconds, 2)
    row["beam"] = ev.beam
    queue.put(row)


def _tag(run: str, repeat: int, queue) -> None:
    from firth.query import stage_paths
    from firth.query.tag import load, predict_tags, read_input

    test = stage_paths(PROJECT, f"evaluate-tagger@{run}")["test"]
    sents = read_input(test.read_text(encoding="utf-8"))
    model, vocab, device, _ = load(PROJECT, PROJECT / "params.yaml", run)
    seconds = _best(lambda: predict_tags(model, vocab, device, sents), repeat)
    queue.put(
        {
            "task": "tag",
            "run": run,
            "sentences": len(sents),
            "sentences_per_second": round(len(sents) / seconds, 2),
        }
    )


def _score(run: str, repeat: int, queue) -> None:
    from firth.config import load_sections
    from firth.lm.config import Lm
    from firth.lm.stage import Scorer
    from firth.query import stage_paths

    cfg, _ = load_sections("lm", PROJECT / "params.yaml", schema=Lm)
    scorer = Scorer(stage_paths(PROJECT, f"train-lm@{run}")["out"], cfg, run)
    test = stage_paths(PROJECT, f"evaluate-lm@{run}")["test"]
    lines = test.read_text(encoding="utf-8").splitlines()
    out = scorer.split(lines, None)
    seconds = _best(lambda: scorer.split(lines, None), repeat)
    queue.put(
        {
            "task": "score",
            "run": run,
            "tokens": out["tokens"],
            "tokens_per_second": round(out["tokens"] / seconds),
        }
    )


def _neighbours(method: str, seed: int, repeat: int, queue) -> None:
    from firth.embeddings.vectors import load_word2vec
    from firth.query import stage_paths

    folder = stage_paths(PROJECT, f"train-embeddings-{method}@{seed}")["out"]
    emb = load_word2vec(folder / "vectors.txt")
    words = emb.words[:200]
    index = emb.index()

    def ask():
        for w in words:
            emb.nearest(emb.matrix[index[w]], k=10, exclude=[index[w]])

    ask()  # (the unit rows are computed once)
    seconds = _best(ask, repeat)
    queue.put(
        {
            "task": "neighbours",
            "run": method,
            "words": len(words),
            "vocabulary": len(emb.words),
            "words_per_second": round(len(words) / seconds, 1),
        }
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sentences", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/query.json")
    args = p.parse_args()
    params = yaml.safe_load((PROJECT / "params.yaml").read_text(encoding="utf-8"))
    from firth.query import stage_paths

    def made(stage: str, name: str) -> bool:  # where dvc.yaml says it writes
        return (stage_paths(PROJECT, stage)["out"] / name).exists()

    rows, skipped = [], []
    for run in params["nmt"]["runs"]:
        if made(f"train-nmt@{run}", "model.pt"):
            rows.append(
                in_fresh_process(
                    _translate, run, args.sentences, args.repeat, label=run
                )
            )
        else:
            skipped.append(f"train-nmt@{run}")
    t = params["tagger"]
    for run in (f"{d}-{h}" for d in t["data"] for h in t["heads"]):
        if made(f"train-tagger@{run}-{t['seeds'][0]}", "config.json"):
            rows.append(in_fresh_process(_tag, run, args.repeat, label=run))
        else:
            skipped.append(f"train-tagger@{run}-{t['seeds'][0]}")
    for run in params["lm"]["runs"]:
        if made(f"train-lm@{run}", "vocab.json"):
            rows.append(in_fresh_process(_score, run, args.repeat, label=run))
        else:
            skipped.append(f"train-lm@{run}")
    for method, seeds in params["embeddings"]["seeds"].items():
        if made(f"train-embeddings-{method}@{seeds[0]}", "vectors.txt"):
            rows.append(
                in_fresh_process(
                    _neighbours, method, seeds[0], args.repeat, label=method
                )
            )
        else:
            skipped.append(f"train-embeddings-{method}@{seeds[0]}")
    # the models' own commit (FIRTH_PROJECT may be a clone trained elsewhere)
    commit = head_commit(PROJECT)
    inside = PROJECT.resolve().is_relative_to(ROOT)
    result = {
        "machine": machine(),
        "command": "python benchmarks/query.py " + " ".join(sys.argv[1:]),
        "project": os.path.relpath(PROJECT, ROOT) if inside else str(PROJECT),
        "commit": commit or None,
        "rows": rows,
        "not_trained": skipped,
    }
    write_result(args.out, result)
    for row in rows:
        print(row)
    if skipped:
        print("not trained (skipped):", ", ".join(skipped))


if __name__ == "__main__":
    main()
