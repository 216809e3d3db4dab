"""The work of the language-model stages (stages/train_lm.py, stages/evaluate_lm.py)
given the parsed ``lm`` params: one run trained (``LmTraining``: Kneser-Ney counts or
a neural model through firth.lm.train) and one trained run scored
(``evaluate``), each returning what its stage writes."""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path

import numpy as np
import torch

from firth.accel import Accel, resolve_device
from firth.audit.scores import read_flags, split_scores
from firth.checkpoint import Checkpoint, run_key
from firth.distributed import Group
from firth.errors import ConfigError, DataError
from firth.io import sha256_file
from firth.lm import kneser_ney
from firth.lm.config import EvaluateLm, Lm, LmRun
from firth.lm.data import Vocabulary, build_vocabulary, encode_stream, read_lines
from firth.lm.gradient_flow import model_gradient_norms
from firth.lm.lines import by_line, kn_by_line, score_targets
from firth.lm.metrics import bits_per_char, characters, perplexity
from firth.lm.models import build_model
from firth.lm.results import KnTrain, LmDetail, LmEval, LmItems, NeuralTrain
from firth.lm.train import sample, score, train
from firth.results import Draft, StageOutput, parse, peak_rss_mb
from firth.training import check_kept

log = logging.getLogger(__name__)

RECURRENT = ("elman", "lstm", "gru")


def select(cfg: Lm, name: str, error: type[Exception] = ConfigError) -> LmRun:
    """The run ``name`` of ``lm.runs``."""
    if name not in cfg.runs:
        raise error(f"lm.runs has no run '{name}' (runs: {', '.join(cfg.runs)})")
    return cfg.runs[name]


def common_of(cfg: Lm, run: LmRun):
    """``lm.common`` with the run's own epoch budget where it sets one."""
    if run.epochs is None:
        return cfg.common
    return cfg.common.model_copy(update={"epochs": run.epochs})


class LmTraining:
    """One run of ``lm.runs`` ready to train: its lines read and its vocabulary
    built (``load`` reads them; the constructor does no I/O)."""

    def __init__(
        self,
        cfg: Lm,
        name: str,
        *,
        train_lines: list[str],
        valid_lines: list[str],
        vocab: Vocabulary,
        corpus_sha256: str,
        checkpoint: Checkpoint,
    ):
        self.cfg, self.name = cfg, name
        self.run = select(cfg, name)
        self.family = self.run.family
        self.common = c = common_of(cfg, self.run)
        self.train_lines, self.valid_lines, self.vocab = train_lines, valid_lines, vocab
        self.settings = {
            "run": name,
            "family": self.family,
            "seed": self.run.seed,
            "common": c.model_dump(),
            self.family: getattr(cfg, self.family).model_dump(),
            "corpus_sha256": corpus_sha256,
        }
        # neural runs only; keyed by the settings and the hardware in ``neural``
        self.checkpoint = checkpoint
        # the train.json record, typed from the start (firth.results.Draft)
        schema = KnTrain if self.family == "kn" else NeuralTrain
        self.stats = Draft(
            schema,
            f"train-lm@{name} stats",
            run=name,
            family=self.family,
            seed=self.run.seed,
            unit=c.unit,
            vocab=vocab.size,
            corpus_sha256=corpus_sha256,
        )

    @classmethod
    def load(
        cls,
        cfg: Lm,
        name: str,
        *,
        train: Path,
        valid: Path,
        tokenizer: Path,
        checkpoint: Path,
    ) -> LmTraining:
        """The run ``name`` on the text files ``train`` and ``valid``, with the
        tokenizer folder ``tokenizer`` (BPE runs) and its checkpoint file."""
        c = common_of(cfg, select(cfg, name))
        train_lines = read_lines(train)
        vocab = build_vocabulary(
            train_lines,
            unit=c.unit,
            min_count=c.min_count,
            tokenizer=tokenizer / "tokenizer.json",
        )
        log.info("%s: %s vocabulary of %d tokens", name, c.unit, vocab.size)
        return cls(
            cfg,
            name,
            train_lines=train_lines,
            valid_lines=read_lines(valid),
            vocab=vocab,
            corpus_sha256=sha256_file(train),
            checkpoint=Checkpoint(checkpoint, key=""),
        )

    def _done(self, write, curve: list[dict]) -> StageOutput:
        self.stats.set(peak_rss_mb=peak_rss_mb())
        log.info(
            "%s: best valid perplexity %.2f",
            self.name,
            self.stats["best_valid_perplexity"],
        )
        stats = self.stats.build()
        return StageOutput(write, stats, curve)

    def _write_common(self, folder: Path) -> None:
        self.vocab.save(folder / "vocab.json")
        (folder / "config.json").write_text(json.dumps(self.settings, indent=2) + "\n")

    def kneser_ney(self) -> StageOutput:
        """The interpolated modified Kneser-Ney model of ``lm.kn.order``."""
        vocab, order = self.vocab, self.cfg.kn.order

        def words(lines):
            return [[vocab.tokens[i] for i in vocab.encode_line(x)] for x in lines]

        sents = words(self.train_lines)
        t0 = time.perf_counter()
        lm = kneser_ney.build(sents, order=order)
        build_s = time.perf_counter() - t0
        self.stats.set(
            order=order,
            train_tokens=sum(len(s) for s in sents),
            build_seconds=round(build_s, 2),
            ngrams_per_order=[len(g) for g in lm.grams],
            discounts=[[round(d, 4) for d in ds] for ds in lm.discounts],
            best_valid_perplexity=lm.score(words(self.valid_lines))["perplexity"],
        )

        def write(folder: Path) -> None:
            kneser_ney.save(lm, folder)
            self._write_common(folder)

        return self._done(write, [])

    def clear(self) -> None:
        self.checkpoint.clear()

    def fit(
        self, accel: Accel, group: Group, *, max_steps: int | None = None
    ) -> StageOutput | None:
        """The neural model trained as one rank of ``group`` (None on ranks other
        than 0, which write nothing); clear ``checkpoint`` once it is written."""
        c, vocab, seed = self.common, self.vocab, self.run.seed
        train_stream = encode_stream(vocab, self.train_lines)
        valid_stream = encode_stream(vocab, self.valid_lines)
        torch.manual_seed(seed)
        model = build_model(self.family, vocab.size, self.cfg, eos=vocab.eos)
        self.checkpoint.key = run_key(
            **self.settings, **accel.describe(), processes=group.world
        )
        result = train(
            model,
            train_stream,
            valid_stream,
            c,
            seed=seed,
            accel=accel,
            group=group,
            checkpoint=self.checkpoint,
            max_steps=max_steps,
        )
        if not group.main:
            return None
        model.load_state_dict(result.best_state)
        v_nll, v_tok = score(
            model, valid_stream, batch=c.eval_batch, bptt=c.bptt, device=accel.device
        )
        best = result.stats["best_valid_loss"]
        self.stats.set(**result.stats)
        self.stats.set(
            train_tokens=len(train_stream) - 1,
            parameters=sum(p.numel() for p in model.parameters()),
            **accel.describe(),
            processes=group.world,
            threads=torch.get_num_threads(),
            kept_weights_valid_loss=v_nll / v_tok,
        )
        check_kept(self.name, v_nll / v_tok, best)

        def write(folder: Path) -> None:
            torch.save(model.state_dict(), folder / "model.pt")
            self._write_common(folder)

        return self._done(write, result.history)


def unigram_nll(vocab: Vocabulary, stream: torch.Tensor) -> np.ndarray:
    """The add-one unigram model's NLL in nats of every target of ``stream``."""
    counts = np.asarray(vocab.counts, dtype=np.float64) + 1.0
    return -np.log(counts[stream[1:].numpy()] / counts.sum())


def baselines(vocab: Vocabulary, stream: torch.Tensor, chars: int) -> dict:
    """Uniform over the vocabulary (perplexity exactly V) and the add-one unigram
    model of the training counts, on the targets of ``stream``."""
    n = len(stream) - 1
    uni_nll = float(unigram_nll(vocab, stream).sum())
    uni_nll_uniform = n * math.log(vocab.size)
    return {
        "uniform": {
            "perplexity": perplexity(uni_nll_uniform, n),
            "bits_per_char": bits_per_char(uni_nll_uniform, chars),
        },
        "unigram": {
            "perplexity": perplexity(uni_nll, n),
            "bits_per_char": bits_per_char(uni_nll, chars),
        },
    }


class Scorer:
    """A trained run loaded from its folder (train-lm's out): Kneser-Ney counts or
    a neural model on its device."""

    def __init__(self, folder: Path, cfg: Lm, name: str):
        self.run = select(cfg, name, DataError)
        self.name, self.cfg, c = name, cfg, cfg.common
        if not (folder / "vocab.json").exists():
            raise DataError(f"{folder}: no trained model (run train-lm@{name})")
        self.vocab = Vocabulary.load(folder / "vocab.json")
        self.device = resolve_device(c.device, key="lm.common.device")
        self.model = self.kn = None
        if self.run.family == "kn":
            self.kn = kneser_ney.load(folder)
        else:
            self.model = build_model(
                self.run.family, self.vocab.size, cfg, eos=self.vocab.eos
            )
            self.model.load_state_dict(
                torch.load(folder / "model.pt", weights_only=True)
            )
            self.model.to(self.device).eval()

    def by_line(self, lines: list[str], stream: torch.Tensor):
        """NLL in nats and the number of targets of every line."""
        vocab, c = self.vocab, self.cfg.common
        if self.model is None:
            return kn_by_line(
                self.kn,
                [[vocab.tokens[i] for i in vocab.encode_line(x)] for x in lines],
            )
        targets = score_targets(
            self.model, stream, batch=c.eval_batch, bptt=c.bptt, device=self.device
        )
        return by_line(targets, stream, vocab.eos)

    def split(self, lines: list[str], flags: Path | None) -> tuple[dict, dict]:
        """The scores of ``lines`` and their per-line statistics (bits, tokens,
        characters, the unigram baseline's bits, the audit's dirty flag); with
        the audit's ``flags``, the perplexity on its dirty and clean lines too."""
        vocab = self.vocab
        chars = characters(lines)
        stream = encode_stream(vocab, lines)
        t0 = time.perf_counter()
        line_nll, line_tokens = self.by_line(lines, stream)
        nll, tokens = float(line_nll.sum()), int(line_tokens.sum())
        seconds = time.perf_counter() - t0
        uni_nll, _ = by_line(
            torch.from_numpy(unigram_nll(vocab, stream)), stream, vocab.eos
        )
        per_line = {
            "bits": [round(float(x) / math.log(2), 4) for x in line_nll],
            "tokens": [int(x) for x in line_tokens],
            "chars": [len(x) + 1 for x in lines],
            "unigram_bits": [round(float(x) / math.log(2), 4) for x in uni_nll],
            "dirty": [0] * len(lines),
        }
        words = sum(len(x.split()) for x in lines)
        out = {
            "tokens": tokens,
            "characters": chars,
            "nll_bits": nll / math.log(2),
            "perplexity": perplexity(nll, tokens),
            "bits_per_char": bits_per_char(nll, chars),
            "oov_rate": vocab.oov(lines) / words,
            "tokens_per_second": round(tokens / seconds),
            "baselines": baselines(vocab, stream, chars),
        }
        if flags is not None:
            dirty = read_flags(flags, [str(i) for i in range(len(lines))])
            per_line["dirty"] = [int(d) for d in dirty]
            out["contamination"] = split_scores(
                lambda idx, n=line_nll, k=line_tokens: perplexity(
                    float(n[idx].sum()), int(k[idx].sum())
                ),
                dirty,
            )
        return out, per_line

    def samples(self, ev: EvaluateLm) -> list[dict]:
        """``ev.samples`` ancestral samples after each prompt (seeded by the run)."""
        gen = torch.Generator().manual_seed(self.run.seed)
        if not ev.samples:
            return []
        if self.model is None:
            return kn_samples(self.kn, ev, gen)
        vocab, out = self.vocab, []
        for prompt in ev.prompts:
            ids = [vocab.eos, *vocab.encode_line(prompt)]
            for _ in range(ev.samples):
                cont = sample(
                    self.model,
                    ids,
                    max_tokens=ev.sample_tokens,
                    temperature=ev.temperature,
                    eos=vocab.eos,
                    generator=gen,
                    device=self.device,
                    segment=self.cfg.common.bptt,
                )
                out.append({"prompt": prompt, "continuation": vocab.decode(cont)})
        return out

    def gradient_flow(self, lines: list[str], ev: EvaluateLm) -> list[dict]:
        """||dL_T/dh_t|| against T - t on ``ev.flow_sequences`` test windows
        (recurrent runs; empty for the others)."""
        if self.run.family not in RECURRENT:
            return []
        bptt = self.cfg.common.bptt
        stream = encode_stream(self.vocab, lines)
        span = bptt + ev.flow_distance + 1
        starts = np.linspace(0, len(stream) - span - 1, ev.flow_sequences).astype(int)
        ids = torch.stack([stream[s : s + span] for s in starts]).to(self.device)
        norms = model_gradient_norms(self.model, ids, warm=bptt).cpu()
        return [
            {
                "distance": ev.flow_distance - 1 - t,
                "grad_norm": float(norms[t]),
                "relative": float(norms[t] / norms[-1]),
            }
            for t in range(ev.flow_distance - 1, -1, -1)
        ]


def evaluate(
    cfg: Lm,
    ev: EvaluateLm,
    name: str,
    *,
    model: Path,
    test: Path,
    valid: Path,
    flags: Path,
) -> tuple[LmEval, LmDetail, LmItems]:
    """The run ``name`` (its folder ``model``) scored on the text files ``test``
    and ``valid``, the test lines also split by the audit's ``flags``: its eval
    record, its detail (samples, gradient flow) and its per-line test
    statistics."""
    scorer = Scorer(model, cfg, name)
    run, vocab = scorer.run, scorer.vocab
    test_hash = sha256_file(test)
    result: dict = {
        "run": name,
        "family": run.family,
        "seed": run.seed,
        "unit": vocab.unit,
        "vocab": vocab.size,
        "test_sha256": test_hash,
    }
    lines = {"test": read_lines(test), "valid": read_lines(valid)}
    per_line = {}
    for split in ("test", "valid"):
        result[split], per_line[split] = scorer.split(
            lines[split], flags if split == "test" else None
        )
        log.info(
            "%s %s: perplexity %.2f, %.4f bits/char",
            name,
            split,
            result[split]["perplexity"],
            result[split]["bits_per_char"],
        )
    detail = {
        "run": name,
        "samples": scorer.samples(ev),
        "gradient_flow": scorer.gradient_flow(lines["test"], ev),
    }
    if flow := detail["gradient_flow"]:
        far = flow[-1]
        result["gradient_flow"] = {
            "distance": far["distance"],
            "relative_norm": far["relative"],
        }
    return (
        parse(result, LmEval, f"evaluate-lm@{name} scores"),
        parse(detail, LmDetail, f"evaluate-lm@{name} detail"),
        LmItems(run=name, test_sha256=test_hash, **per_line["test"]),
    )


def kn_samples(lm: kneser_ney.KneserNey, ev, gen: torch.Generator) -> list[dict]:
    """Ancestral samples from the n-gram model after each prompt."""
    out = []
    words = [w for i, w in enumerate(lm.vocab) if i != 1]
    for prompt in ev.prompts:
        for _ in range(ev.samples):
            ctx, cont = prompt.split(), []
            while len(cont) < ev.sample_tokens:
                p = torch.from_numpy(lm.conditional(ctx)) ** (1 / ev.temperature)
                w = words[int(torch.multinomial(p / p.sum(), 1, generator=gen))]
                if w == kneser_ney.EOS:
                    break
                cont.append(w)
                ctx.append(w)
            out.append({"prompt": prompt, "continuation": " ".join(cont)})
    return out
