"""DVC stage evaluate-tagger@<data>-<head>: test-split scores of every model of a
tagger run (each seed of ``tagger.seeds``, random and pretrained word embeddings,
from data/taggers/<data>-<head>/seed-<seed>/), their seed spread, the
baselines (majority tag, word-only) on the same test split, the headline metric on
the contamination audit's clean and dirty test sentences (audit-tagged@<data>), and
a few test sentences with gold and predicted tags ->
reports/tagging/<data>-<head>/eval.json.

NER: seqeval entity F1 (micro and per type), token accuracy, and the share of
predicted sentences that break BIO. POS: token accuracy, and accuracy on tokens whose
form never occurs in training."""

from __future__ import annotations

import json
import logging

import torch

from firth import runner
from firth.audit.scores import read_flags, seed_mean, split_scores
from firth.config import load_sections
from firth.errors import DataError
from firth.io import read_json
from firth.results import parse, save
from firth.tagging.config import EvaluateTagger
from firth.tagging.data import Vocab, encode, norm, read_split
from firth.tagging.evaluate import baselines, headline, scheme_of, scores, spread
from firth.tagging.models import build_tagger
from firth.tagging.results import TaggerEval
from firth.tagging.stage import setup
from firth.tagging.train import predict

log = logging.getLogger("evaluate_tagger")
SPREAD_KEYS = (
    "f1",
    "precision",
    "recall",
    "accuracy",
    "oov_accuracy",
    "invalid_bio_share",
)


def body(args) -> None:
    run = setup(args.root, runner.params_path(args), args.data, args.head)
    ev, _ = load_sections("evaluate_tagger", run.params, schema=EvaluateTagger)
    c, device = run.common, run.device
    tr = read_split(run.data_dir / "train.conll")
    te = read_split(run.data_dir / "test.conll")
    folders = {
        seed: args.root / "data" / "taggers" / run.name / f"seed-{seed}"
        for seed in run.cfg.seeds
    }
    for seed, folder in folders.items():
        if not (folder / "config.json").exists():
            raise DataError(
                f"{folder}: no trained tagger (run train-tagger@{run.name}-{seed})"
            )
    trained = {seed: read_json(f / "config.json") for seed, f in folders.items()}
    inits = trained[run.cfg.seeds[0]]["inits"]
    bio = scheme_of(t for _, tags in tr for t in tags) == "BIO"
    forms = {w for tokens, _ in tr for w in tokens}
    gold = [tags for _, tags in te]
    tokens = [toks for toks, _ in te]
    unknown_tags = sorted({t for g in gold for t in g} - {t for _, g in tr for t in g})
    if unknown_tags:
        log.warning("test tags never seen in training: %s", ", ".join(unknown_tags))

    def score(pred):
        return scores(gold, pred, tokens=tokens, train_forms=forms, bio=bio)

    dirty = read_flags(
        args.root / "data" / "audit" / "tagged" / run.data / "flags.tsv",
        [str(i) for i in range(len(te))],
    )

    def split(pred):
        """The headline metric on all / dirty / clean test sentences."""
        return split_scores(
            lambda idx: headline(
                scores(
                    [gold[i] for i in idx],
                    [pred[i] for i in idx],
                    tokens=[tokens[i] for i in idx],
                    train_forms=forms,
                    bio=bio,
                )
            ),
            dirty,
        )

    models, examples, known = [], {}, {}
    for init in inits:
        for seed, folder in folders.items():
            vocab = Vocab.from_json(
                json.loads((folder / f"vocab-{init}.json").read_text())
            )
            model = build_tagger(vocab, run.head, c)
            model.load_state_dict(torch.load(folder / f"{init}.pt", weights_only=True))
            model.to(device)
            pred = predict(
                model, encode(vocab, te), vocab, batch=ev.batch, device=device
            )
            s = score(pred)
            models.append(
                {"init": init, "seed": seed, **s, "contamination": split(pred)}
            )
            log.info("%s %s seed %d: %.4f", run.name, init, seed, headline(s))
            if init not in examples:
                examples[init] = _examples(te, pred, ev.examples)
                # the first seed's vocabulary (the pretrained one: training words
                # plus that seed's vector words)
                known[init] = sum(
                    norm(w) in vocab.word_ix for t in tokens for w in t
                ) / sum(map(len, tokens))
    summary = {}
    for init in inits:
        rows = [m for m in models if m["init"] == init]
        summary[init] = {
            k: spread([r[k] for r in rows])
            for k in SPREAD_KEYS
            if k in rows[0] and rows[0][k] is not None
        }
    base = {
        name: {**score(pred), "contamination": split(pred)}
        for name, pred in baselines(tr, te).items()
    }
    contamination = {
        init: seed_mean([m["contamination"] for m in models if m["init"] == init])
        for init in inits
    }
    result = parse(
        {
            "run": run.name,
            "data": run.data,
            "head": run.head,
            "scheme": "BIO" if bio else "tags",
            "metric": "f1" if bio else "accuracy",
            "test_sentences": len(te),
            "test_tokens": sum(map(len, tokens)),
            "test_oov_share": sum(w not in forms for t in tokens for w in t)
            / sum(map(len, tokens)),
            # share of test tokens whose normalised form has a row of its own in
            # each initialisation's vocabulary (pretrained: training + vector words)
            "test_tokens_in_vocab": known,
            "inits": inits,
            "seeds": run.cfg.seeds,
            "vectors_paths": {str(s): t["vectors_path"] for s, t in trained.items()},
            "summary": summary,
            # the headline metric on the audit's dirty and clean test sentences
            # (data/audit/tagged/<data>/flags.tsv), mean over seeds
            "contamination": contamination,
            "baselines": base,
            "models": models,
            "examples": examples,
        },
        TaggerEval,
        f"evaluate-tagger@{run.name} scores",
    )
    save(args.root / "reports" / "tagging" / run.name / "eval.json", result)


def _examples(sents, pred, k: int) -> list[dict]:
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


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("data", help="a name in tagger.data (a source under sources.tagged)")
    p.add_argument("head", help="a head in tagger.heads: softmax | crf")
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
