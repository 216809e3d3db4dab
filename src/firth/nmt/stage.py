"""The work of the translation stages (stages/train_nmt.py, stages/evaluate_nmt.py)
given the parsed ``nmt`` params: one run of ``nmt.runs`` trained (``NmtTraining``) and
one trained run, or the copy-source baseline, scored on the test split
(``evaluate``), each returning what its stage writes."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from firth.accel import Accel, resolve_device
from firth.audit.scores import read_flags, split_scores
from firth.checkpoint import Checkpoint, run_key
from firth.distributed import Group
from firth.errors import ConfigError, DataError
from firth.io import sha256_file
from firth.nmt.config import EvaluateNmt, Nmt, NmtRun, schedule
from firth.nmt.data import (
    Pairs,
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
    Scores,
    best_and_worst,
    bucket_scores,
    corpus_scores,
    repeated_trigram_rate,
    source_word_share,
)
from firth.nmt.models import build_model
from firth.nmt.results import NmtDetail, NmtEval, NmtItems, NmtTrain
from firth.nmt.train import nll, pointer_statistics, train
from firth.results import Draft, StageOutput, parse, peak_rss_mb
from firth.training import check_kept

log = logging.getLogger(__name__)

COPY = "copy-source"  # the baseline's name in place of a run's
SWITCHES = {"pointer", "coverage", "coverage_loss"}  # where a run sets them


def select(cfg: Nmt, name: str, *, baseline: bool = False) -> NmtRun | None:
    """The run ``name`` of ``nmt.runs`` (None for the copy-source baseline where
    ``baseline``)."""
    if COPY in cfg.runs:
        raise ConfigError(f"nmt.runs: '{COPY}' is reserved for the baseline")
    if name not in cfg.runs and not (baseline and name == COPY):
        also = f", or {COPY}" if baseline else ""
        raise ConfigError(
            f"nmt.runs has no run '{name}' (runs: {', '.join(cfg.runs)}{also})"
        )
    return cfg.runs.get(name)


@dataclass
class Encoded:
    """One split's token ids: the source, the target and each verse's unknown
    source spans (copyable ids of a pointer run; empty otherwise)."""

    src: list[list[int]]
    tgt: list[list[int]]
    oov: list


def encode_split(tok, pairs: Pairs, pointer: bool) -> Encoded:
    if pointer:  # unknown source spans get copyable ids
        ext = encode_extended(tok, pairs.source, pairs.target)
        return Encoded(ext.src, ext.tgt, ext.oov)
    src, tgt = encode(tok, pairs.source), encode(tok, pairs.target)
    return Encoded(src, tgt, [()] * len(src))


def load_trained(folder: Path, cfg: Nmt, name: str, run: NmtRun, tok, device):
    """The weights of the run ``name`` (model.pt in its folder, train-nmt's out)
    in their model, on ``device``."""
    weights = folder / "model.pt"
    if not weights.exists():
        raise DataError(f"{weights}: not found (run train-nmt@{name} first)")
    model = build_model(
        run.model, tok.get_vocab_size(), cfg, pointer=run.pointer, coverage=run.coverage
    )
    model.load_state_dict(torch.load(weights, weights_only=True))
    return model.to(device).eval()


class NmtTraining:
    """One run of ``nmt.runs`` ready to train on its pairs, already read and
    encoded (``load`` reads them; the constructor does no I/O)."""

    def __init__(
        self,
        cfg: Nmt,
        name: str,
        *,
        tok,
        train_pairs: Pairs,
        valid_pairs: Pairs,
        hashes: dict[str, str],
        checkpoint: Checkpoint,
    ):
        self.cfg, self.name = cfg, name
        self.run = run = select(cfg, name)
        self.tok, self.train_pairs, self.valid_pairs = tok, train_pairs, valid_pairs
        self.train_set = encode_split(tok, train_pairs, run.pointer)
        self.valid_set = encode_split(tok, valid_pairs, run.pointer)
        self.settings = {
            "run": name,
            "model": run.model,
            "seed": run.seed,
            "epochs": run.epochs,
            "common": cfg.common.model_dump(),
            "transformer": cfg.transformer.model_dump(),
            "train_sha256": hashes["train"],
            "tokenizer_sha256": hashes["tokenizer"],
            **run.model_dump(include=SWITCHES, exclude_defaults=True),
        }
        # keyed by the settings and the hardware once they are known (``fit``)
        self.checkpoint = checkpoint
        # the train.json record, typed from the start (firth.results.Draft)
        self.stats = Draft(
            NmtTrain,
            f"train-nmt@{name} stats",
            run=name,
            model=run.model,
            seed=run.seed,
            **run.model_dump(include=SWITCHES, exclude_defaults=True),
            train_pairs=len(train_pairs),
            vocab=tok.get_vocab_size(),
            train_sha256=hashes["train"],
        )

    @classmethod
    def load(
        cls,
        cfg: Nmt,
        name: str,
        *,
        train: Path,
        valid: Path,
        tokenizer: Path,
        checkpoint: Path,
    ) -> NmtTraining:
        """The run ``name`` on the TSV files ``train`` and ``valid`` with the joint
        BPE in the folder ``tokenizer``, checkpointing to ``checkpoint``."""
        select(cfg, name)  # a bad name fails before any file is read
        tok_path = tokenizer / "tokenizer.json"
        return cls(
            cfg,
            name,
            tok=load_tokenizer(tok_path),
            train_pairs=read_pairs(train),
            valid_pairs=read_pairs(valid),
            hashes={"train": sha256_file(train), "tokenizer": sha256_file(tok_path)},
            checkpoint=Checkpoint(checkpoint, key=""),
        )

    def clear(self) -> None:
        self.checkpoint.clear()

    def fit(
        self, accel: Accel, group: Group, *, max_steps: int | None = None
    ) -> StageOutput | None:
        """The model trained as one rank of ``group`` (None on ranks other than 0,
        which write nothing); clear ``checkpoint`` once it is written."""
        run, c, tok = self.run, schedule(self.cfg, self.run.model), self.tok
        tr, va = self.train_set, self.valid_set
        torch.manual_seed(run.seed)
        model = build_model(
            run.model,
            tok.get_vocab_size(),
            self.cfg,
            pointer=run.pointer,
            coverage=run.coverage,
        )
        self.checkpoint.key = run_key(
            **self.settings, **accel.describe(), processes=group.world
        )
        result = train(
            model,
            tok,
            tr.src,
            tr.tgt,
            va.src,
            va.tgt,
            self.valid_pairs.target,
            c,
            seed=run.seed,
            epochs=run.epochs,
            coverage_loss=run.coverage_loss,
            valid_oov=va.oov if run.pointer else None,
            accel=accel,
            group=group,
            checkpoint=self.checkpoint,
            max_steps=max_steps,
        )
        if not group.main:
            return None
        model.load_state_dict(result.best_state)
        v_nll, v_tok = nll(
            model, va.src, va.tgt, batch_tokens=c.batch_tokens, device=accel.device
        )
        check_kept(self.name, v_nll / v_tok, result.stats["best_valid_loss"])
        stats = self.stats.set(
            **result.stats,
            kept_weights_valid_loss=v_nll / v_tok,
            parameters=sum(p.numel() for p in model.parameters()),
            **accel.describe(),
            processes=group.world,
            threads=torch.get_num_threads(),
            peak_rss_mb=peak_rss_mb(),
        )
        log.info(
            "%s: best valid perplexity %.2f after %.1f training minutes",
            self.name,
            stats["best_valid_perplexity"],
            stats["train_seconds"] / 60,
        )

        def write(folder: Path) -> None:
            torch.save(model.state_dict(), folder / "model.pt")
            settings = json.dumps(self.settings, indent=2)
            (folder / "config.json").write_text(settings + "\n")

        return StageOutput(write, stats.build(), result.history)


class Translator:
    """A trained run (its folder ``model``, its tokenizer folder ``tokenizer``)
    translating the test split greedily and with beam search."""

    def __init__(
        self,
        cfg: Nmt,
        ev: EvaluateNmt,
        name: str,
        run: NmtRun,
        test: Pairs,
        *,
        model: Path,
        tokenizer: Path,
    ):
        self.cfg, self.ev, self.name, self.run, c = cfg, ev, name, run, cfg.common
        self.tok = load_tokenizer(tokenizer / "tokenizer.json")
        self.device = resolve_device(c.device, key="nmt.common.device")
        self.model = load_trained(model, cfg, name, run, self.tok, self.device)
        self.test = encode_split(self.tok, test, run.pointer)

    def test_loss(self) -> float:
        t = self.test
        total, n = nll(
            self.model,
            t.src,
            t.tgt,
            batch_tokens=self.cfg.common.batch_tokens,
            device=self.device,
        )
        return total / n

    def translate(self, beam: int) -> tuple[list[list[int]], float]:
        """Token ids of every test output (greedy for beam 1), in input order,
        and the seconds spent."""
        c, ev = self.cfg.common, self.ev
        t0 = time.perf_counter()
        out = decode_corpus(
            self.model,
            self.test.src,
            batch=c.eval_batch,
            a=c.max_len_a,
            b=c.max_len_b,
            device=self.device,
            beam=beam,
            alpha=ev.alpha,
            penalty_form=ev.penalty,
            beta=ev.beta,
            min_len=ev.min_len,
        )
        return out, time.perf_counter() - t0

    def heatmap(self, i: int, verse: str) -> dict:
        """The greedy output of test verse ``i`` with its attention weights."""
        c, src, oov = self.cfg.common, self.test.src, self.test.oov
        b = make_batch([i], src, None).to(self.device)
        res = greedy(
            self.model,
            b.src,
            b.src_mask,
            max_lengths(b.src_mask.sum(1), c.max_len_a, c.max_len_b),
            attention=True,
        )
        return {
            "id": verse,
            "source": [*pieces(self.tok, src[i], oov[i]), "</s>"],
            "output": [*pieces(self.tok, res.tokens[0], oov[i]), "</s>"],
            "weights": [[round(float(w), 4) for w in row] for row in res.attention[0]],
        }

    def outputs(self, result: dict, detail: dict) -> dict[str, list[str]]:
        """The greedy and beam translations; their speed into ``detail``, the
        pointer's statistics into ``result``."""
        seconds, out = {}, {}
        for name, k in (("greedy", 1), ("beam", self.ev.beam)):
            ids, seconds[name] = self.translate(k)
            out[name] = [
                decode(self.tok, x, o) for x, o in zip(ids, self.test.oov, strict=True)
            ]
            if self.run.pointer:
                result[f"{name}_pointer"] = pointer_statistics(
                    self.model,
                    self.test.src,
                    ids,
                    batch_tokens=self.cfg.common.batch_tokens,
                    device=self.device,
                )
            log.info(
                "%s: %s decoding of %d verses in %.1f s",
                self.name,
                name,
                len(ids),
                seconds[name],
            )
        detail["decode_seconds"] = {k: round(v, 2) for k, v in seconds.items()}
        return out


def heatmaps(translator: Translator, test: Pairs, verses: list[str]) -> list[dict]:
    """Attention maps of ``verses`` (test ids; none for a model without
    attention)."""
    where = {v: i for i, v in enumerate(test.ids)}
    for verse in verses:
        if verse not in where:
            raise ConfigError(
                f"evaluate_nmt.heatmaps: verse '{verse}' is not in the test split"
            )
    if not translator.model.has_attention:
        return []
    return [translator.heatmap(where[v], v) for v in verses]


def score(name: str, hyps: list[str], test: Pairs, dirty, ev: EvaluateNmt):
    """One output's scores (and copying measures), its contamination split and
    its detail: signatures, scores per source-length bucket, best and worst."""
    refs = list(test.target)
    stats = Scores(hyps, refs)
    scores, sigs = corpus_scores(stats)
    log.info(
        "%s: BLEU %.2f, chrF %.2f, chrF++ %.2f",
        name,
        scores["bleu"],
        scores["chrf"],
        scores["chrf++"],
    )
    row = {
        **scores,
        "repeated_trigrams": round(repeated_trigram_rate(hyps), 6),
        "source_word_share": round(source_word_share(hyps, test.source), 6),
        "mean_words": round(sum(len(h.split()) for h in hyps) / len(hyps), 3),
    }
    contamination = {
        metric: split_scores(lambda idx, m=metric: round(stats.score(m, idx), 4), dirty)
        for metric in ("bleu", "chrf")
    }
    detail = {
        "signatures": sigs,
        "buckets": bucket_scores(stats, test.source, ev.buckets),
        "examples": best_and_worst(
            stats, test.ids, test.source, hyps, refs, ev.examples
        ),
    }
    return row, contamination, detail, stats


def evaluate(
    cfg: Nmt,
    ev: EvaluateNmt,
    name: str,
    *,
    test_path: Path,
    flags: Path,
    model: Path | None = None,
    tokenizer: Path | None = None,
) -> tuple[NmtEval, NmtDetail, NmtItems, dict[str, list[str]]]:
    """The run ``name`` (its folder ``model``, its tokenizer folder
    ``tokenizer``), or the copy-source baseline, on the test pairs ``test_path``
    split by the audit's ``flags``: its eval record, its detail, its per-verse
    statistics, and its translations as columns: id, greedy, beam."""
    run = select(cfg, name, baseline=True)
    if run is not None and (model is None or tokenizer is None):
        raise ConfigError(f"evaluate_nmt.py {name}: needs --model and --tokenizer")
    test = read_pairs(test_path)
    test_hash = sha256_file(test_path)
    result: dict = {"run": name, "test_pairs": len(test), "test_sha256": test_hash}
    detail: dict = {"run": name}
    if run is None:
        outputs = {"greedy": list(test.source), "beam": list(test.source)}
        result["model"] = COPY
    else:
        translator = Translator(
            cfg, ev, name, run, test, model=model, tokenizer=tokenizer
        )
        loss = translator.test_loss()
        result.update(
            model=run.model,
            seed=run.seed,
            **run.model_dump(include=SWITCHES, exclude_defaults=True),
            test_loss=loss,
            test_perplexity=float(torch.tensor(loss).exp()),
            beam_width=ev.beam,
            alpha=ev.alpha,
            penalty=ev.penalty,
            beta=ev.beta,
        )
        outputs = translator.outputs(result, detail)
        detail["heatmaps"] = heatmaps(translator, test, ev.heatmaps)
    dirty = read_flags(flags, test.ids)
    result["contamination"] = {}
    for key in ("signatures", "buckets", "examples"):
        detail[key] = {}
    scored = {}
    for decoding, hyps in outputs.items():
        row, contamination, more, scored[decoding] = score(
            f"{name} {decoding}", hyps, test, dirty, ev
        )
        result[decoding] = row
        result["contamination"][decoding] = contamination
        detail["signatures"] = more["signatures"]
        detail["buckets"][decoding] = more["buckets"]
        detail["examples"][decoding] = more["examples"]
    refs = list(test.target)
    result["reference_repeated_trigrams"] = round(repeated_trigram_rate(refs), 6)
    result["reference_source_word_share"] = round(
        source_word_share(refs, test.source), 6
    )
    record = parse(result, NmtEval, f"evaluate-nmt@{name} scores")
    typed = parse(detail, NmtDetail, f"evaluate-nmt@{name} detail")
    beam = scored["beam"].stats
    items = NmtItems(
        run=name,
        test_sha256=test_hash,
        dirty=[int(d) for d in dirty],
        src_words=[len(x.split()) for x in test.source],
        bleu=[[int(x) for x in row] for row in beam["bleu"]],
        chrf=[[int(x) for x in row] for row in beam["chrf"]],
    )
    return record, typed, items, {"id": list(test.ids), **outputs}
