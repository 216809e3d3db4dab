"""Scoring translations with sacreBLEU: corpus BLEU, chrF and chrF++ with their
signatures, the same by source-length bucket, and the best and worst sentences.

Buckets count the source's whitespace words (as Bahdanau et al. 2015 count
sentence length), so every model is bucketed the same way whatever its
tokenization."""

from __future__ import annotations

from collections import Counter

from sacrebleu.metrics import BLEU, CHRF

from firth.nmt.data import bucket_labels, bucket_of


def metrics() -> dict:
    return {"bleu": BLEU(), "chrf": CHRF(), "chrf++": CHRF(word_order=2)}


class Scores:
    """BLEU, chrF and chrF++ of one output against its references, with every
    sentence's sufficient statistics extracted once. A corpus score is the
    metric's aggregate of its sentences' statistics (that is how sacreBLEU's
    ``corpus_score`` computes it, and how its bootstrap test rescores resampled
    corpora), so the score of any subset (a length bucket, the clean or dirty
    verses, one sentence) is exactly sacreBLEU's on that subset, without reading
    the sentences again."""

    def __init__(self, hyps: list[str], refs: list[str]) -> None:
        self.metrics = metrics()
        self.stats = {
            name: m._extract_corpus_statistics(hyps, [refs])
            for name, m in self.metrics.items()
        }

    def score(self, metric: str, idx: list[int] | None = None) -> float:
        """``metric``'s corpus score on the sentences ``idx`` (default: all)."""
        stats = self.stats[metric]
        part = stats if idx is None else [stats[i] for i in idx]
        return self.metrics[metric]._aggregate_and_compute(part).score

    def signatures(self) -> dict:
        return {name: str(m.get_signature()) for name, m in self.metrics.items()}


def corpus_scores(scores: Scores) -> tuple[dict, dict]:
    """{metric: score} and {metric: sacreBLEU signature}."""
    return (
        {name: round(scores.score(name), 4) for name in scores.metrics},
        scores.signatures(),
    )


def bucket_scores(scores: Scores, sources: list[str], edges: list[int]) -> list[dict]:
    """BLEU and chrF per source-length bucket (empty buckets are listed with n 0)."""
    groups: dict[str, list[int]] = {b: [] for b in bucket_labels(edges)}
    for i, s in enumerate(sources):
        groups[bucket_of(len(s.split()), edges)].append(i)
    rows = []
    for label, idx in groups.items():
        row = {"bucket": label, "n": len(idx), "bleu": None, "chrf": None}
        if idx:
            row["bleu"] = round(scores.score("bleu", idx), 4)
            row["chrf"] = round(scores.score("chrf", idx), 4)
        rows.append(row)
    return rows


def best_and_worst(
    scores: Scores,
    ids: list[str],
    sources: list[str],
    hyps: list[str],
    refs: list[str],
    n: int,
) -> dict:
    """The ``n`` test sentences with the highest and the lowest sentence chrF
    (ties broken by id), with source, output and reference."""
    scored = sorted(
        ((scores.score("chrf", [i]), i) for i in range(len(hyps))),
        key=lambda x: (-x[0], ids[x[1]]),
    )

    def rows(part):
        return [
            {
                "id": ids[i],
                "chrf": round(s, 2),
                "source": sources[i],
                "output": hyps[i],
                "reference": refs[i],
            }
            for s, i in part
        ]

    return {"best": rows(scored[:n]), "worst": rows(scored[::-1][:n])}


def repeated_trigram_rate(lines: list[str]) -> float:
    """Share of word 3-grams that repeat an earlier 3-gram of the same line."""
    total = repeated = 0
    for line in lines:
        w = line.split()
        grams = Counter(zip(w, w[1:], w[2:], strict=False))
        total += sum(grams.values())
        repeated += sum(c - 1 for c in grams.values())
    return repeated / total if total else 0.0


def source_word_share(hyps: list[str], sources: list[str]) -> float:
    """Share of output words that also occur in their source sentence (how much
    of the output is copied, whatever the model)."""
    total = found = 0
    for h, s in zip(hyps, sources, strict=True):
        src = set(s.split())
        words = h.split()
        total += len(words)
        found += sum(w in src for w in words)
    return found / total if total else 0.0
