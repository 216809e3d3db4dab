"""The work of the tagger stages (stages/train_tagger.py, stages/evaluate_tagger.py):
the settings of one ``<data>-<head>`` run checked against ``params.yaml`` (torch
threads and device, the vectors a seed reads), one cell of a run trained
(``CellTraining``) and every model of a run scored on the test split
(``evaluate``), each returning what its stage writes."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from firth.accel import Accel, resolve_device
from firth.audit.scores import read_flags, seed_mean, split_scores
from firth.checkpoint import Checkpoint, run_key
from firth.config import check_seed, load_sections, load_sources
from firth.distributed import SINGLE, Group
from firth.embeddings.config import Embeddings
from firth.embeddings.vectors import Embedding, load_word2vec
from firth.errors import ConfigError, DataError
from firth.io import read_json, sha256_file, shown
from firth.results import Draft, StageOutput, parse, peak_rss_mb
from firth.tagging.config import EvaluateTagger, Tagger, TaggerCommon
from firth.tagging.data import Vocab, encode, norm, read_split
from firth.tagging.evaluate import (
    baselines,
    gold_entities,
    headline,
    scheme_of,
    scores,
    sentence_stats,
    spread,
)
from firth.tagging.models import build_tagger
from firth.tagging.results import TaggerEval, TaggerItems, TaggerTrain
from firth.tagging.train import predict, train

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaggerRun:
    params: Path
    cfg: Tagger
    common: TaggerCommon
    data: str
    head: str
    name: str  # "<data>-<head>": folder under data/taggers and reports/tagging
    device: torch.device


def setup(params: Path, data: str, head: str) -> TaggerRun:
    """Check that ``data`` and ``head`` are in the ``tagger`` section and that the
    data is a tagged source; pick the device."""
    cfg, _ = load_sections("tagger", params, schema=Tagger)
    for key, value, allowed in (
        ("data", data, cfg.data),
        ("heads", head, cfg.heads),
    ):
        if value not in allowed:
            raise ConfigError(
                f"{params}: key 'tagger.{key}' has no '{value}' "
                f"(it lists: {', '.join(allowed)})"
            )
    if data not in load_sources("tagged", params):
        raise ConfigError(
            f"{params}: key 'tagger.data' names '{data}', but there is no source "
            f"'sources.tagged.{data}'"
        )
    return TaggerRun(
        params=params,
        cfg=cfg,
        common=cfg.common,
        data=data,
        head=head,
        name=f"{data}-{head}",
        device=resolve_device(cfg.common.device, key="tagger.common.device"),
    )


def vectors_dir(vectors: Path, params: Path, method: str, seed: int) -> Path:
    """The folder seed-<seed> of the method's vectors (``vectors``: train-embeddings'
    outs of that method), or its first seed's where ``seed`` is not one of
    ``embeddings.seeds.<method>``."""
    emb, _ = load_sections("embeddings", params, schema=Embeddings)
    seeds = emb.seeds.get(method)
    if seeds is None:
        raise ConfigError(
            f"{params}: key 'tagger.vectors' is '{method}', not a method of "
            f"embeddings.seeds ({', '.join(emb.seeds)})"
        )
    chosen = seed if seed in seeds else seeds[0]
    return vectors / f"seed-{chosen}"


class CellTraining:
    """One cell (``seed``) of a tagger run ready to train: its splits, the seed's
    word vectors, and the settings that key its checkpoints (``load`` reads them;
    the constructor does no I/O)."""

    def __init__(
        self,
        run: TaggerRun,
        seed: int,
        *,
        train_set: list,
        valid_set: list,
        vectors: Embedding,
        settings: dict,
        checkpoints: Path,
    ):
        check_seed(run.params, "tagger.seeds", seed, run.cfg.seeds)
        self.run, self.seed, c = run, seed, run.common
        self.train_set, self.valid_set, self.vectors = train_set, valid_set, vectors
        tags = (t for _, tags in train_set for t in tags)
        self.bio = scheme_of(tags) == "BIO"
        if vectors.dim != c.word_dim:
            raise ConfigError(
                f"{run.params}: key 'tagger.common.word_dim' is {c.word_dim} but "
                f"{settings['vectors_path']} has {vectors.dim}-dimensional vectors"
            )
        self.inits = ["random", run.cfg.vectors]
        self.settings = {
            "run": run.name,
            "data": run.data,
            "head": run.head,
            "seed": seed,
            "common": c.model_dump(),
            "vectors": run.cfg.vectors,
            **settings,
        }
        self.checkpoints = checkpoints
        # the train.json record, typed from the start (firth.results.Draft)
        self.stats = Draft(
            TaggerTrain,
            f"train-tagger@{run.name}-{seed} stats",
            run=run.name,
            data=run.data,
            head=run.head,
            seed=seed,
            scheme="BIO" if self.bio else "tags",
            valid_metric="entity F1" if self.bio else "token accuracy",
            train_sentences=len(train_set),
            vectors=run.cfg.vectors,
            vectors_path=settings["vectors_path"],
            vectors_words=len(vectors.words),
            train_sha256=settings["train_sha256"],
        )

    @classmethod
    def load(
        cls,
        run: TaggerRun,
        seed: int,
        *,
        train: Path,
        valid: Path,
        vectors: Path,
        checkpoints: Path,
    ) -> CellTraining:
        """The cell on the CoNLL files ``train`` and ``valid`` with the seed's
        word vectors from ``vectors`` (the method's folder of seeds),
        checkpointing into the folder ``checkpoints``."""
        check_seed(run.params, "tagger.seeds", seed, run.cfg.seeds)
        vec_path = vectors_dir(vectors, run.params, run.cfg.vectors, seed)
        vec_path = vec_path / "vectors.txt"
        return cls(
            run,
            seed,
            train_set=read_split(train),
            valid_set=read_split(valid),
            vectors=load_word2vec(vec_path),
            settings={
                "vectors_path": shown(vec_path),
                "train_sha256": sha256_file(train),
                "valid_sha256": sha256_file(valid),
                "vectors_sha256": sha256_file(vec_path),
            },
            checkpoints=checkpoints,
        )

    def fit_one(
        self, init: str, accel: Accel, max_steps: int | None = None
    ) -> tuple[Vocab, dict, list[dict]]:
        """One model (random or pretrained word embeddings): its vocabulary, its
        weights and statistics, and its curve rows."""
        run, seed, tr = self.run, self.seed, self.train_set
        vocab = Vocab.build(tr, self.vectors.words if init != "random" else ())
        counts = Counter(norm(w) for tokens, _ in tr for w in tokens)
        singletons = {vocab.word_ix[w] for w, n in counts.items() if n == 1}
        name = f"{init}-seed{seed}"
        torch.manual_seed(seed)
        model = build_tagger(vocab, run.head, run.common)
        found = 0
        if init != "random":
            found = model.load_vectors(
                vocab.words, self.vectors.index(), self.vectors.matrix
            )
        ckpt = Checkpoint(
            self.checkpoints / f"{name}.pt",
            run_key(**self.settings, init=init, **accel.describe()),
        )
        result = train(
            model,
            encode(vocab, tr),
            encode(vocab, self.valid_set),
            self.valid_set,
            vocab,
            run.common,
            seed=seed,
            accel=accel,
            singletons=singletons,
            bio=self.bio,
            checkpoint=ckpt,
            desc=f"{run.name} {name}",
            max_steps=max_steps,
        )
        model.load_state_dict(result.best_state)
        stats = {
            "init": init,
            "seed": seed,
            **result.stats,
            "pretrained_rows": found,
            "vocab": len(vocab.words),
            "parameters": sum(p.numel() for p in model.parameters()),
            "state": {k: v.cpu() for k, v in model.state_dict().items()},
        }
        curve = [{"init": init, "seed": seed, **row} for row in result.history]
        return vocab, stats, curve

    def fit(
        self, accel: Accel, group: Group = SINGLE, *, max_steps: int | None = None
    ) -> StageOutput:
        """Both models of the cell (on one process: ``group`` is SINGLE); clear
        once they are written."""
        vocabs, models, curve = {}, [], []
        for init in self.inits:
            vocabs[init], stats, rows = self.fit_one(init, accel, max_steps)
            models.append(stats)
            curve += rows
        states = {m["init"]: m.pop("state") for m in models}

        def write(folder: Path) -> None:
            for init, vocab in vocabs.items():
                text = json.dumps(vocab.to_json()) + "\n"
                (folder / f"vocab-{init}.json").write_text(text)
            for init, state in states.items():
                torch.save(state, folder / f"{init}.pt")
            settings = {**self.settings, "inits": self.inits}
            (folder / "config.json").write_text(json.dumps(settings, indent=2) + "\n")

        self.stats.set(
            tags=len(vocabs["random"].tags),
            **accel.describe(),
            threads=torch.get_num_threads(),
            models=models,
            peak_rss_mb=peak_rss_mb(),
        )
        return StageOutput(write, self.stats.build(), curve)

    def clear(self) -> None:
        for init in self.inits:
            (self.checkpoints / f"{init}-seed{self.seed}.pt").unlink(missing_ok=True)


SPREAD_KEYS = (
    "f1",
    "precision",
    "recall",
    "accuracy",
    "oov_accuracy",
    "invalid_bio_share",
)


class TestSplit:
    """A run's test split (the CoNLL file ``test``) scored against gold, with the
    training split's forms and scheme (``train``), and the contamination audit's
    dirty sentences (``flags``)."""

    def __init__(self, train: Path, test: Path, flags: Path):
        self.train_set = tr = read_split(train)
        self.sents = te = read_split(test)
        self.bio = scheme_of(t for _, tags in tr for t in tags) == "BIO"
        self.forms = {w for tokens, _ in tr for w in tokens}
        self.gold = [tags for _, tags in te]
        self.tokens = [toks for toks, _ in te]
        seen = {t for _, g in tr for t in g}
        if unknown := sorted({t for g in self.gold for t in g} - seen):
            log.warning("test tags never seen in training: %s", ", ".join(unknown))
        self.sha256 = sha256_file(test)
        self.dirty = read_flags(flags, [str(i) for i in range(len(te))])

    def score(self, pred, idx=None) -> dict:
        """The scores of ``pred`` (on the sentences ``idx``, default all)."""
        idx = range(len(self.gold)) if idx is None else idx
        return scores(
            [self.gold[i] for i in idx],
            [pred[i] for i in idx],
            tokens=[self.tokens[i] for i in idx],
            train_forms=self.forms,
            bio=self.bio,
        )

    def scored(self, pred) -> dict:
        """The scores, and the headline metric on all / dirty / clean sentences."""
        split = split_scores(lambda idx: headline(self.score(pred, idx)), self.dirty)
        return {**self.score(pred), "contamination": split}

    def in_vocab(self, vocab: Vocab) -> float:
        """Share of test tokens whose normalised form has a row in ``vocab``."""
        n = sum(norm(w) in vocab.word_ix for t in self.tokens for w in t)
        return n / sum(map(len, self.tokens))


def trained_folders(models: Path, run: TaggerRun) -> dict[int, Path]:
    """The folder seed-<seed> under ``models`` of each seed of the run."""
    folders = {seed: models / f"seed-{seed}" for seed in run.cfg.seeds}
    for seed, folder in folders.items():
        if not (folder / "config.json").exists():
            raise DataError(
                f"{folder}: no trained tagger (run train-tagger@{run.name}-{seed})"
            )
    return folders


def _summary(models: list[dict], inits: list[str]) -> dict:
    """Each score's spread over the seeds of every initialisation."""
    by_init = {i: [m for m in models if m["init"] == i] for i in inits}
    return {
        init: {
            k: spread([r[k] for r in rows])
            for k in SPREAD_KEYS
            if k in rows[0] and rows[0][k] is not None
        }
        for init, rows in by_init.items()
    }


def evaluate(
    run: TaggerRun, ev: EvaluateTagger, test: TestSplit, models_dir: Path
) -> tuple[TaggerEval, TaggerItems]:
    """Every model of the run (the seed folders under ``models_dir``) on the
    ``test`` split, their seed spread, the baselines, the contamination split and
    the worst sentences; and the per-sentence statistics the report's verdicts
    resample. A free CRF on BIO tags is also decoded under the BIO constraints
    (``constrained``)."""
    folders = trained_folders(models_dir, run)
    trained = {seed: read_json(f / "config.json") for seed, f in folders.items()}
    inits = trained[run.cfg.seeds[0]]["inits"]
    also_constrained = run.head == "crf" and test.bio
    models, examples, known = [], {}, {}
    constrained, items = [], {"models": [], "constrained": []}
    for init in inits:
        for seed, folder in folders.items():
            vocab = Vocab.from_json(read_json(folder / f"vocab-{init}.json"))
            model = build_tagger(vocab, run.head, run.common)
            model.load_state_dict(torch.load(folder / f"{init}.pt", weights_only=True))
            model.to(run.device)
            enc = encode(vocab, test.sents)
            ways = [("models", False)] + ([("constrained", True)] * also_constrained)
            for key, constrain in ways:
                pred = predict(
                    model,
                    enc,
                    vocab,
                    batch=ev.batch,
                    device=run.device,
                    constrained=constrain,
                )
                scored = {"init": init, "seed": seed, **test.scored(pred)}
                (constrained if constrain else models).append(scored)
                stats = sentence_stats(test.gold, pred, bio=test.bio)
                items[key].append({"init": init, "seed": seed, **stats})
                if constrain:
                    continue
                log.info("%s %s seed %d: %.4f", run.name, init, seed, headline(scored))
                if init not in examples:
                    examples[init] = worst_sentences(test.sents, pred, ev.examples)
                    # the first seed's vocabulary (the pretrained one: training
                    # words plus that seed's vector words)
                    known[init] = test.in_vocab(vocab)
    by_init = {i: [m for m in models if m["init"] == i] for i in inits}
    tokens = test.tokens
    base = baselines(test.train_set, test.sents)
    record = {
        "run": run.name,
        "data": run.data,
        "head": run.head,
        "scheme": "BIO" if test.bio else "tags",
        "metric": "f1" if test.bio else "accuracy",
        "test_sentences": len(test.sents),
        "test_tokens": sum(map(len, tokens)),
        "test_oov_share": sum(w not in test.forms for t in tokens for w in t)
        / sum(map(len, tokens)),
        # share of test tokens whose normalised form has a row of its own in
        # each initialisation's vocabulary (pretrained: training + vector words)
        "test_tokens_in_vocab": known,
        "inits": inits,
        "seeds": run.cfg.seeds,
        "vectors_paths": {str(s): t["vectors_path"] for s, t in trained.items()},
        "summary": _summary(models, inits),
        # the headline metric on the audit's dirty and clean test sentences
        # (data/audit/tagged/<data>/flags.tsv), mean over seeds
        "contamination": {
            init: seed_mean([m["contamination"] for m in rows])
            for init, rows in by_init.items()
        },
        "baselines": {name: test.scored(pred) for name, pred in base.items()},
        "models": models,
        "examples": examples,
        "test_sha256": test.sha256,
    }
    if constrained:
        record["constrained"] = _summary(constrained, inits)
        record["constrained_models"] = constrained
    where = f"evaluate-tagger@{run.name}"
    per_sentence = {
        "run": run.name,
        "test_sha256": test.sha256,
        "tokens": [len(t) for t in tokens],
        "gold": gold_entities(test.gold) if test.bio else [],
        "dirty": [int(d) for d in test.dirty],
        **items,
        "baselines": {
            name: sentence_stats(test.gold, pred, bio=test.bio)
            for name, pred in base.items()
        },
    }
    return (
        parse(record, TaggerEval, f"{where} scores"),
        parse(per_sentence, TaggerItems, f"{where} items"),
    )


def worst_sentences(sents, pred, k: int) -> list[dict]:
    """The k test sentences with the most token errors (ties: the shorter first)."""
    rows = []
    for i, ((tokens, gold), p) in enumerate(zip(sents, pred, strict=True)):
        errors = sum(a != b for a, b in zip(gold, p, strict=True))
        if errors:
            rows.append((-errors, len(tokens), i))
    out = []
    for _, _, i in sorted(rows)[:k]:
        tokens, gold = sents[i]
        out.append({"tokens": tokens, "gold": gold, "predicted": pred[i]})
    return out
