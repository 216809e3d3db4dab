"""What the probe stages compute (firth.probe): the POS data, the
representations of a trained LM run and of the same architecture untrained (its
own seed's random initialisation), or of a method's word vectors, and every
probe on every layer."""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from tqdm import tqdm

from firth.embeddings.vectors import load_word2vec
from firth.errors import DataError
from firth.io import sha256_file
from firth.lm.config import Lm
from firth.lm.data import UNK, Vocabulary
from firth.lm.models import build_model
from firth.probe.config import Probe
from firth.probe.probe import control_labels, train_probe
from firth.probe.representations import lm_ids, lm_layers, vector_layer
from firth.probe.results import ProbeEval, ProbeItems, ProbeRow
from firth.sources.formats import read_conll

log = logging.getLogger(__name__)
SPLITS = ("train", "valid", "test")


def read_pos(folder: Path) -> dict[str, tuple[list[list[str]], list[list[str]]]]:
    """Each split's sentences (words) and tags from ``folder``/<split>.conll."""
    out = {}
    for split in SPLITS:
        path = folder / f"{split}.conll"
        if not path.exists():
            raise DataError(f"{path}: not found (the tagged data's {split} split)")
        sents = list(read_conll(path))
        if not sents:
            raise DataError(f"{path}: no sentences")
        out[split] = ([w for w, _ in sents], [t for _, t in sents])
    return out


def _probe_all(
    name: str,
    feats: dict[str, dict[str, list[torch.Tensor]]],  # model -> split -> layers
    seeds: dict[str, int],
    data,
    cfg: Probe,
) -> tuple[list[ProbeRow], dict, dict]:
    """Every probe on every layer of every model's features."""
    train_words = [w for s in data["train"][0] for w in s]
    train_tags = [t for s in data["train"][1] for t in s]
    labels = sorted(set(train_tags))
    index = {t: i for i, t in enumerate(labels)}

    def y(split: str, control: bool) -> torch.Tensor:
        words = [w for s in data[split][0] for w in s]
        tags = [t for s in data[split][1] for t in s]
        if control:
            tags = control_labels(train_words, train_tags, words, seed=cfg.control_seed)
        # a test tag never seen in training can never be predicted: class -1
        return torch.tensor([index.get(t, -1) for t in tags])

    targets = {c: {s: y(s, c) for s in SPLITS} for c in (False, True)}
    rows, task, control = [], {}, {}
    jobs = [
        (model, layer, kind, ps)
        for model, by_split in feats.items()
        for layer in range(len(by_split["train"]))
        for kind in cfg.probes
        for ps in cfg.seeds
    ]
    for model, layer, kind, ps in tqdm(jobs, desc=f"probes of {name}", leave=False):
        x = {s: feats[model][s][layer] for s in SPLITS}
        res = {}
        for c in (False, True):
            t = targets[c]
            res[c] = train_probe(
                x["train"], t["train"], x["valid"], t["valid"], x["test"], t["test"],
                kind=kind, classes=len(labels), hidden=cfg.hidden,
                epochs=cfg.epochs, lr=cfg.lr, l2=cfg.l2, seed=ps, batch=cfg.batch,
            )  # fmt: skip
        acc = {c: 100 * float(res[c].correct.mean()) for c in res}
        rows.append(
            ProbeRow(
                model=model,
                seed=seeds[model],
                layer=layer,
                probe=kind,
                probe_seed=ps,
                task_accuracy=round(acc[False], 4),
                control_accuracy=round(acc[True], 4),
                selectivity=round(acc[False] - acc[True], 4),
                valid_task_accuracy=round(100 * res[False].valid_accuracy, 4),
                valid_control_accuracy=round(100 * res[True].valid_accuracy, 4),
                epochs_task=res[False].epochs,
                epochs_control=res[True].epochs,
            )
        )
        key = f"{model}|{seeds[model]}|{layer}|{kind}|{ps}"
        task[key] = [int(v) for v in res[False].correct]
        control[key] = [int(v) for v in res[True].correct]
    return rows, task, control


def probe_lm(
    folder: Path, lm: Lm, run_name: str, pos: Path, cfg: Probe
) -> tuple[ProbeEval, ProbeItems]:
    """The LM run ``run_name`` (train-lm's folder) and its untrained twin."""
    if run_name not in lm.runs:
        raise DataError(f"probe.lm_runs: {run_name} is not a run of lm.runs")
    run = lm.runs[run_name]
    if run.family in ("kn", "ffnn"):
        raise DataError(
            f"probe.lm_runs: {run_name} is a {run.family} model (no layers of states)"
        )
    if not (folder / "model.pt").exists():
        raise DataError(f"{folder}: no trained model (run train-lm@{run_name})")
    vocab = Vocabulary.load(folder / "vocab.json")
    if vocab.unit != "word":
        raise DataError(f"{run_name}: probes read word-level LMs (lm.common.unit)")
    data = read_pos(pos)
    trained = build_model(run.family, vocab.size, lm, eos=vocab.eos)
    trained.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    torch.manual_seed(run.seed)
    untrained = build_model(run.family, vocab.size, lm, eos=vocab.eos)
    feats = {}
    for model_name, model in (("trained", trained), ("untrained", untrained)):
        feats[model_name] = {}
        for split in SPLITS:
            per_sentence = [lm_layers(model, lm_ids(vocab, s)) for s in data[split][0]]
            n_layers = len(per_sentence[0])
            feats[model_name][split] = [
                torch.cat([p[k] for p in per_sentence]) for k in range(n_layers)
            ]
    unk = vocab.tokens.index(UNK)
    test_ids = [i for s in data["test"][0] for i in lm_ids(vocab, s)[1:]]
    cov = sum(i != unk for i in test_ids) / len(test_ids)
    rows, task, control = _probe_all(
        run_name, feats, {"trained": run.seed, "untrained": run.seed}, data, cfg
    )
    return _records(
        run_name, "lm", run.family, pos, data, cov, feats, rows, task, control
    )


def probe_vectors(
    folder: Path, method: str, seeds: list[int], pos: Path, cfg: Probe
) -> tuple[ProbeEval, ProbeItems]:
    """Every seed's vectors of ``method`` (folder/seed-<seed>/vectors.txt)."""
    data = read_pos(pos)
    rows, task, control, cov, feats = [], {}, {}, 0.0, {}
    for seed in seeds:
        emb = load_word2vec(folder / f"seed-{seed}" / "vectors.txt")
        index = emb.index()
        feats = {
            "trained": {
                s: [torch.cat([vector_layer(emb, x, index) for x in data[s][0]])]
                for s in SPLITS
            }
        }
        words = [w for s in data["test"][0] for w in s]
        cov = sum(w in index or w.lower() in index for w in words) / len(words)
        r, t, c = _probe_all(method, feats, {"trained": seed}, data, cfg)
        rows += r
        task.update(t)
        control.update(c)
    return _records(
        method, "vectors", method, pos, data, cov, feats, rows, task, control
    )


def _records(name, kind, family, pos, data, cov, feats, rows, task, control):
    test_tokens = sum(len(s) for s in data["test"][0])
    tags = {t for s in data["train"][1] for t in s}
    record = ProbeEval(
        name=name,
        kind=kind,
        family=family,
        data=pos.name,
        tags=len(tags),
        test_tokens=test_tokens,
        coverage=round(cov, 6),
        layers=len(next(iter(feats.values()))["test"]),
        rows=rows,
    )
    items = ProbeItems(
        name=name,
        test_sha256=sha256_file(pos / "test.conll"),
        task=task,
        control=control,
    )
    return record, items
