"""Words per second of word2vec's own loop (firth.embeddings.word2vec) on the
default's training text, for skip-gram and CBOW with negative sampling and the
hierarchical softmax: one epoch each, one thread, in this process, one after the
other. Writes benchmarks/results/word2vec_loop.json.

    python benchmarks/word2vec_loop.py --text <project>/data/subsampled/text/train.txt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import head_commit, machine, speed_probe, write_result

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> None:
    from firth.embeddings.corpus import load_corpus
    from firth.embeddings.word2vec import Word2VecConfig, train_word2vec

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--text", type=Path, default=ROOT / "data/subsampled/text/train.txt")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/word2vec_loop.json"))
    args = p.parse_args(argv)
    corpus, _ = load_corpus(args.text, min_count=5, max_sentence_len=10000)
    rows = []
    probe = speed_probe()
    for arch, loss in (("sg", "ns"), ("sg", "hs"), ("cbow", "ns"), ("cbow", "hs")):
        cfg = Word2VecConfig(
            arch=arch,
            loss=loss,
            epochs=args.epochs,
            alpha=0.05 if arch == "cbow" else 0.025,
        )
        _, st = train_word2vec(corpus, cfg)
        rows.append(
            {
                "arch": arch,
                "loss": loss,
                "seconds": round(st.seconds, 2),
                "words_per_second": round(st.words_per_second),
                "loss_per_epoch": [round(x, 4) for x in st.loss_per_epoch],
            }
        )
        print(rows[-1], flush=True)
    write_result(
        args.out,
        {
            "command": " ".join(
                ["python benchmarks/word2vec_loop.py", *(argv or sys.argv[1:])]
            ),
            "commit": head_commit(ROOT),
            "machine": machine(),
            "corpus_tokens": corpus.vocab.total_tokens,
            "vocab": len(corpus.vocab),
            "threads": 1,
            "speed_probe_before": probe,
            "speed_probe_after": speed_probe(),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
