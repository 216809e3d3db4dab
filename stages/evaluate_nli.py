"""DVC stage evaluate-nli@<data>-<model>: test accuracy of every seed of a run
(data/nli/<data>-<model>/seed-<seed>/), with per-label precision / recall / F1, the
confusion matrix, the seed spread, the majority-class baseline (the most frequent
training label), the accuracy on the contamination audit's clean and dirty test
examples (audit-nli@<data>), and a few misclassified test examples ->
reports/nli/<data>-<model>/eval.json."""

from __future__ import annotations

import json
import logging

import torch

from firth import runner
from firth.audit.scores import read_flags, seed_mean, split_scores
from firth.config import load_sections
from firth.errors import DataError
from firth.io import read_json
from firth.nli.config import EvaluateNli
from firth.nli.data import Vocab, encode, load_splits
from firth.nli.models import build
from firth.nli.results import NliEval
from firth.nli.stage import setup
from firth.nli.train import accuracy, majority, predict, scores
from firth.results import parse, save
from firth.sources.nli import LABELS
from firth.tagging.evaluate import spread

log = logging.getLogger("evaluate_nli")


def body(args) -> None:
    run = setup(args.root, runner.params_path(args), args.data, args.model)
    ev, _ = load_sections("evaluate_nli", run.params, schema=EvaluateNli)
    cfg = run.cfg
    splits, _ = load_splits(run.raw, cfg, run.seed0)
    test = splits["test"]
    gold = [LABELS.index(r["label"]) for r in test]
    dirty = read_flags(
        args.root / "data" / "audit" / "nli" / run.data / "flags.tsv",
        [str(i) for i in range(len(test))],
    )

    def split(pred):
        return split_scores(
            lambda idx: accuracy([gold[i] for i in idx], [pred[i] for i in idx]),
            dirty,
        )

    models, examples = [], []
    for seed in cfg.seeds:
        folder = args.root / "data" / "nli" / run.name / f"seed-{seed}"
        if not (folder / "model.pt").exists():
            raise DataError(
                f"{folder}: no trained model (run train-nli@{run.name}-{seed})"
            )
        vocab = Vocab(json.loads((folder / "vocab.json").read_text()))
        model = build(run.model, len(vocab.words), cfg)
        model.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
        model.to(run.device)
        enc = encode(test, vocab, lowercase=cfg.lowercase, max_len=cfg.max_len)
        pred = predict(model, enc, batch_size=ev.batch, device=run.device)
        s = scores(gold, pred)
        models.append({"seed": seed, **s, "contamination": split(pred)})
        log.info("%s seed %d: accuracy %.4f", run.name, seed, s["accuracy"])
        if not examples:
            examples = [
                {**test[i], "predicted": LABELS[pred[i]]}
                for i in range(len(test))
                if pred[i] != gold[i]
            ][: ev.examples]
    train_labels = [LABELS.index(r["label"]) for r in splits["train"]]
    major = majority(train_labels)
    base = [major] * len(test)
    result = parse(
        {
            "run": run.name,
            "data": run.data,
            "model": run.model,
            "metric": "accuracy",
            "test_examples": len(test),
            "test_label_share": {
                name: gold.count(k) / len(gold) for k, name in enumerate(LABELS)
            },
            "seeds": cfg.seeds,
            "summary": {"accuracy": spread([m["accuracy"] for m in models])},
            "accuracy": spread([m["accuracy"] for m in models])["mean"],
            "baselines": {
                "majority": {
                    "label": LABELS[major],
                    **scores(gold, base),
                    "contamination": split(base),
                }
            },
            # accuracy on the audit's dirty and clean test examples, mean over seeds
            "contamination": seed_mean([m["contamination"] for m in models]),
            "models": models,
            "examples": examples,
            "examples_sha256": read_json(
                args.root
                / "data"
                / "nli"
                / run.name
                / f"seed-{cfg.seeds[0]}"
                / "config.json"
            )["examples_sha256"],
        },
        NliEval,
        f"evaluate-nli@{run.name} scores",
    )
    save(args.root / "reports" / "nli" / run.name / "eval.json", result)


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("data", help="a name in nli.data (a source under sources.nli)")
    p.add_argument("model", help="a model in nli.models: pair | hypothesis")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
