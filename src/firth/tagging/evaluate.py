"""Tagging scores and baselines.

NER (BIO tag sets): entity-level precision, recall and F1 with seqeval (micro over
entities, and per type; conlleval's reading, where an ``I-X`` after ``O`` opens an
entity), token accuracy, and the share of predicted sentences that break BIO (an
``I-X`` that follows neither ``B-X`` nor ``I-X``). POS (other tag sets): token
accuracy, and accuracy on the tokens whose form never occurs in the training split.

Baselines from the training split alone: the majority tag for every token, and the
word-only tagger (each word form's most frequent training tag, no context; forms
unseen in training get the majority tag).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from seqeval.metrics import classification_report
from seqeval.metrics.sequence_labeling import get_entities

from firth.prepare.tagged import is_bio, repair_bio
from firth.results import Spread
from firth.sources.formats import Sentence


def breaks_bio(tags: list[str]) -> bool:
    return repair_bio(tags)[1] > 0


def scheme_of(tags) -> str:
    return "BIO" if is_bio(Counter(tags)) else "tags"


def scores(
    gold: list[list[str]],
    pred: list[list[str]],
    *,
    tokens: list[list[str]],
    train_forms: set[str],
    bio: bool,
) -> dict:
    if len(gold) != len(pred) or any(
        len(g) != len(p) for g, p in zip(gold, pred, strict=True)
    ):
        raise ValueError("gold and predicted tag sequences differ in shape")
    n = correct = oov_n = oov_correct = 0
    for toks, g, p in zip(tokens, gold, pred, strict=True):
        for w, a, b in zip(toks, g, p, strict=True):
            n += 1
            correct += a == b
            if w not in train_forms:
                oov_n += 1
                oov_correct += a == b
    out: dict = {
        "sentences": len(gold),
        "tokens": n,
        "accuracy": correct / n,
        "oov_tokens": oov_n,
        "oov_accuracy": oov_correct / oov_n if oov_n else None,
    }
    if bio:
        rep = classification_report(gold, pred, output_dict=True, zero_division=0)
        micro = rep["micro avg"]
        out.update(
            precision=float(micro["precision"]),
            recall=float(micro["recall"]),
            f1=float(micro["f1-score"]),
            entities=int(micro["support"]),
            per_type={
                k: {
                    "precision": float(v["precision"]),
                    "recall": float(v["recall"]),
                    "f1": float(v["f1-score"]),
                    "support": int(v["support"]),
                }
                for k, v in sorted(rep.items())
                if not k.endswith(" avg")
            },
            invalid_bio_share=sum(breaks_bio(p) for p in pred) / len(pred),
        )
    return out


def sentence_stats(gold: list[list[str]], pred: list[list[str]], *, bio: bool) -> dict:
    """Per sentence: tokens tagged right, and for BIO tags the predicted entities,
    the true positives (a predicted entity equal to a gold one in type and span,
    seqeval's default reading) and the invalid-BIO flag. Summed over sentences
    they give seqeval's micro precision, recall and F1 (entities never cross a
    sentence: tests/test_tagging.py checks the sums against seqeval)."""
    out: dict = {
        "correct": [
            sum(a == b for a, b in zip(g, p, strict=True))
            for g, p in zip(gold, pred, strict=True)
        ]
    }
    if bio:
        tp, n_pred, invalid = [], [], []
        for g, p in zip(gold, pred, strict=True):
            ents = set(get_entities(p))
            tp.append(len(ents & set(get_entities(g))))
            n_pred.append(len(ents))
            invalid.append(int(breaks_bio(p)))
        out.update(pred=n_pred, tp=tp, invalid=invalid)
    return out


def gold_entities(gold: list[list[str]]) -> list[int]:
    """Gold entities per sentence (seqeval's reading)."""
    return [len(set(get_entities(g))) for g in gold]


def headline(s: dict) -> float:
    """The one number a run is ranked by: entity F1 for BIO, else accuracy."""
    return s["f1"] if "f1" in s else s["accuracy"]


def majority_tag(train: list[Sentence]) -> str:
    counts = Counter(t for _, tags in train for t in tags)
    return min(counts, key=lambda t: (-counts[t], t))


def word_only(train: list[Sentence]) -> dict[str, str]:
    """Each training form's most frequent tag (ties: the alphabetically first)."""
    by_word: dict[str, Counter] = defaultdict(Counter)
    for tokens, tags in train:
        for w, t in zip(tokens, tags, strict=True):
            by_word[w][t] += 1
    return {w: min(c, key=lambda t: (-c[t], t)) for w, c in by_word.items()}


def baselines(train: list[Sentence], test: list[Sentence]) -> dict[str, list]:
    """Predictions of the majority and word-only baselines on ``test``."""
    major = majority_tag(train)
    lexicon = word_only(train)
    return {
        "majority": [[major] * len(tokens) for tokens, _ in test],
        "word-only": [[lexicon.get(w, major) for w in tokens] for tokens, _ in test],
    }


def spread(values: list[float]) -> dict:
    """Mean, sample standard deviation (0 for one value), min, max and n
    (firth.results.Spread)."""
    return Spread.of(values).model_dump()
