"""The work of the NLI stages (stages/train_nli.py, stages/evaluate_nli.py): the
``<data>-<model>`` run checked against ``params.yaml`` (torch threads and device),
one seed of a run trained (``train``) and every seed scored on the test split
(``evaluate``), each returning what its stage writes."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from firth.accel import Accel, resolve_device
from firth.audit.scores import read_flags, seed_mean, split_scores
from firth.checkpoint import Checkpoint, run_key
from firth.config import check_seed, load_sections, load_sources
from firth.distributed import SINGLE, Group
from firth.errors import ConfigError, DataError
from firth.io import read_json, sha256_file
from firth.nli.config import EvaluateNli, Nli
from firth.nli.data import Vocab, encode, load_splits, tokenize
from firth.nli.models import build
from firth.nli.results import NliEval, NliItems, NliTrain
from firth.nli.train import accuracy, majority, predict, scores, train
from firth.results import Draft, StageOutput, parse, peak_rss_mb
from firth.sources.nli import LABELS
from firth.tagging.evaluate import spread

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NliRun:
    params: Path
    cfg: Nli
    data: str
    model: str
    name: str  # "<data>-<model>": folder under data/nli and reports/nli
    seed0: int  # the split seed (the top-level ``seed``)
    device: torch.device


def setup(params: Path, data: str, model: str) -> NliRun:
    """Check that ``data`` and ``model`` are in the ``nli`` section and that the
    data is an NLI source; pick the device."""
    cfg, seed = load_sections("nli", params, schema=Nli)
    for key, value, allowed in (
        ("data", data, cfg.data),
        ("models", model, cfg.models),
    ):
        if value not in allowed:
            raise ConfigError(
                f"{params}: key 'nli.{key}' has no '{value}' "
                f"(it lists: {', '.join(allowed) or 'nothing'})"
            )
    if data not in load_sources("nli", params):
        raise ConfigError(
            f"{params}: key 'nli.data' names '{data}', but there is no source "
            f"'sources.nli.{data}'"
        )
    return NliRun(
        params=params,
        cfg=cfg,
        data=data,
        model=model,
        name=f"{data}-{model}",
        seed0=seed,
        device=resolve_device(cfg.device, key="nli.device"),
    )


class NliTraining:
    """One seed of an NLI run ready to train: its splits read, its vocabulary built
    and its examples encoded (``load`` reads them; the constructor does no I/O)."""

    def __init__(
        self,
        run: NliRun,
        seed: int,
        *,
        splits: dict[str, list[dict]],
        carved: bool,
        examples_sha256: str,
        checkpoint: Path,
    ):
        cfg = run.cfg
        check_seed(run.params, "nli.seeds", seed, cfg.seeds)
        self.run, self.seed, self.splits = run, seed, splits
        sentences = (
            tokenize(r[side], lowercase=cfg.lowercase)[: cfg.max_len]
            for r in splits["train"]
            for side in ("premise", "hypothesis")
        )
        self.vocab = Vocab.build(sentences, cfg.min_count)
        self.enc = {
            s: encode(rs, self.vocab, lowercase=cfg.lowercase, max_len=cfg.max_len)
            for s, rs in splits.items()
        }
        self.settings = {
            "run": run.name,
            "data": run.data,
            "model": run.model,
            "seed": seed,
            "nli": cfg.model_dump(exclude={"data", "models", "seeds"}),
            "split_seed": run.seed0,
            "valid_from_train": carved,
            "examples_sha256": examples_sha256,
        }
        self.checkpoint_path = checkpoint
        self.checkpoint: Checkpoint | None = None  # keyed by the hardware in fit
        # the train.json record, typed from the start (firth.results.Draft)
        self.stats = Draft(
            NliTrain,
            f"train-nli@{run.name}-{seed} stats",
            run=run.name,
            data=run.data,
            model=run.model,
            seed=seed,
            train_examples=len(splits["train"]),
            valid_examples=len(splits["valid"]),
            valid_from_train=carved,
            vocab=len(self.vocab.words),
            examples_sha256=examples_sha256,
        )

    @classmethod
    def load(
        cls, run: NliRun, seed: int, *, source: Path, checkpoint: Path
    ) -> NliTraining:
        """The seed on the fetched source in the folder ``source``, checkpointing
        to ``checkpoint``."""
        check_seed(run.params, "nli.seeds", seed, run.cfg.seeds)
        splits, carved = load_splits(source, run.cfg, run.seed0)
        return cls(
            run,
            seed,
            splits=splits,
            carved=carved,
            examples_sha256=sha256_file(source / "examples.jsonl"),
            checkpoint=checkpoint,
        )

    def clear(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint.clear()

    def fit(
        self, accel: Accel, group: Group = SINGLE, *, max_steps: int | None = None
    ) -> StageOutput:
        """The model trained on ``accel`` (one process: ``group`` is SINGLE): its
        folder, statistics and curve; clear once written."""
        run, seed, cfg, settings = self.run, self.seed, self.run.cfg, self.settings
        vocab, enc = self.vocab, self.enc
        torch.manual_seed(seed)
        model = build(run.model, len(vocab.words), cfg)
        self.checkpoint = Checkpoint(
            self.checkpoint_path, run_key(**settings, **accel.describe())
        )
        result = train(
            model,
            enc["train"],
            enc["valid"],
            cfg,
            seed=seed,
            accel=accel,
            checkpoint=self.checkpoint,
            desc=f"{run.name} seed {seed}",
            max_steps=max_steps,
        )

        def write(folder: Path) -> None:
            state = {k: v.cpu() for k, v in result.best_state.items()}
            torch.save(state, folder / "model.pt")
            (folder / "vocab.json").write_text(json.dumps(vocab.words) + "\n")
            text = json.dumps(settings, indent=2) + "\n"
            (folder / "config.json").write_text(text)

        self.stats.set(
            **result.stats,
            parameters=sum(p.numel() for p in model.parameters()),
            **accel.describe(),
            threads=torch.get_num_threads(),
            peak_rss_mb=peak_rss_mb(),
        )
        return StageOutput(write, self.stats.build(), result.history)


def evaluate(
    run: NliRun, ev: EvaluateNli, *, source: Path, models_dir: Path, flags: Path
) -> tuple[NliEval, NliItems]:
    """Every seed of the run (the seed folders under ``models_dir``) on the test
    split of the fetched ``source``, with the majority baseline, the contamination split
    (the audit's ``flags``) and the first seed's misclassified examples; and each
    seed's right or wrong answer per test example (for the verdicts)."""
    cfg = run.cfg
    splits, _ = load_splits(source, cfg, run.seed0)
    test = splits["test"]
    gold = [LABELS.index(r["label"]) for r in test]
    dirty = read_flags(flags, [str(i) for i in range(len(test))])

    def split(pred):
        return split_scores(
            lambda idx: accuracy([gold[i] for i in idx], [pred[i] for i in idx]),
            dirty,
        )

    models, examples, correct = [], [], {}
    for seed in cfg.seeds:
        folder = models_dir / f"seed-{seed}"
        if not (folder / "model.pt").exists():
            raise DataError(
                f"{folder}: no trained model (run train-nli@{run.name}-{seed})"
            )
        vocab = Vocab(read_json(folder / "vocab.json"))
        model = build(run.model, len(vocab.words), cfg)
        model.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
        model.to(run.device)
        enc = encode(test, vocab, lowercase=cfg.lowercase, max_len=cfg.max_len)
        pred = predict(model, enc, batch_size=ev.batch, device=run.device)
        s = scores(gold, pred)
        correct[str(seed)] = [int(p == g) for p, g in zip(pred, gold, strict=True)]
        models.append({"seed": seed, **s, "contamination": split(pred)})
        log.info("%s seed %d: accuracy %.4f", run.name, seed, s["accuracy"])
        if not examples:
            examples = [
                {**test[i], "predicted": LABELS[pred[i]]}
                for i in range(len(test))
                if pred[i] != gold[i]
            ][: ev.examples]
    major = majority([LABELS.index(r["label"]) for r in splits["train"]])
    base = [major] * len(test)
    first = models_dir / f"seed-{cfg.seeds[0]}"
    record = {
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
        "examples_sha256": read_json(first / "config.json")["examples_sha256"],
    }
    items = {
        "run": run.name,
        "examples_sha256": record["examples_sha256"],
        "dirty": [int(d) for d in dirty],
        "correct": correct,
        "majority": [int(g == major) for g in gold],
    }
    return (
        parse(record, NliEval, f"evaluate-nli@{run.name} scores"),
        parse(items, NliItems, f"evaluate-nli@{run.name} items"),
    )
