"""DVC stage tokenizer-<kind>: train the BPE tokenizer on the subsampled training
split (joint source+target for translation) and compare word, character and BPE
segmentations on the valid split."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging

from firth import runner
from firth.bpe import bpe_level, char_level, head, train_bpe, word_level
from firth.config import load_sections
from firth.errors import DataError
from firth.io import atomic_path, write_json

log = logging.getLogger("tokenizer")


def _lines(path, *, columns: tuple[int, ...] | None) -> list[str]:
    if not path.exists():
        raise DataError(f"{path}: not found; run the subsample stage first")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if columns is None:
                out.append(line)
            else:
                parts = line.split("\t")
                out.extend(parts[c] for c in columns)
    if not out:
        raise DataError(f"{path}: empty corpus, no lines")
    return out


def body(args) -> None:
    cfg, _seed = load_sections("tokenizer", runner.params_path(args))
    kind = args.kind
    bpe_cfg = getattr(cfg, kind)
    src = args.root / "data" / "subsampled" / kind
    if kind == "text":
        train = _lines(src / "train.txt", columns=None)
        valid = _lines(src / "valid.txt", columns=None)
    else:
        train = _lines(src / "train.tsv", columns=(1, 2))
        valid = _lines(src / "valid.tsv", columns=(1, 2))
    train = list(head(train, cfg.max_train_lines))
    log.info(
        "%s: training %s BPE (vocab %d) on %d lines",
        kind,
        bpe_cfg.model,
        bpe_cfg.vocab_size,
        len(train),
    )
    tok = train_bpe(
        train,
        model=bpe_cfg.model,
        vocab_size=bpe_cfg.vocab_size,
        min_frequency=bpe_cfg.min_frequency,
    )
    with atomic_path(args.root / "data" / "tokenizers" / kind) as tmp:
        tmp.mkdir()
        tok.save(str(tmp / "tokenizer.json"))
        (tmp / "config.json").write_text(
            json.dumps(
                {**bpe_cfg.model_dump(), "train_lines": len(train), "corpus": kind},
                indent=2,
            )
            + "\n"
        )
    rows = [word_level(train, valid), char_level(train, valid)]
    for size in sorted(set(cfg.compare_vocab_sizes)):
        log.info("%s: comparison BPE at vocab %d", kind, size)
        t = train_bpe(
            train,
            model=bpe_cfg.model,
            vocab_size=size,
            min_frequency=bpe_cfg.min_frequency,
        )
        rows.append(bpe_level(t, valid, scheme=f"bpe-{bpe_cfg.model}", target=size))
    main_row = bpe_level(
        tok, valid, scheme=f"bpe-{bpe_cfg.model}", target=bpe_cfg.vocab_size
    )
    out_dir = args.root / "reports" / "tokenizers"
    with atomic_path(out_dir / f"{kind}.csv") as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            fields = [fl.name for fl in dataclasses.fields(main_row)]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for row in rows:
                d = dataclasses.asdict(row)
                d["oov_rate"] = round(d["oov_rate"], 6)
                d["mean_tokens_per_line"] = round(d["mean_tokens_per_line"], 3)
                w.writerow(d)
    write_json(
        out_dir / f"{kind}.json",
        {
            "model": bpe_cfg.model,
            "vocab_size": main_row.vocab_size,
            "valid_mean_tokens_per_line": round(main_row.mean_tokens_per_line, 3),
            "valid_unk_rate": round(main_row.oov_rate, 6),
            "word_valid_oov_rate": round(rows[0].oov_rate, 6),
            "word_vocab_size": rows[0].vocab_size,
            "train_lines": len(train),
            "valid_lines": len(valid),
        },
    )


def main(argv=None) -> None:
    p = runner.parser(__doc__)
    p.add_argument("kind", choices=["text", "parallel"])
    runner.run(body, p, argv)


if __name__ == "__main__":
    main()
