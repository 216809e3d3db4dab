"""DVC stage tokenizer-<kind>: train the BPE tokenizer on the subsampled training
split (joint source+target for translation) and compare word, character and BPE
segmentations on the valid split."""

from __future__ import annotations

import json

from firth import stage_cli
from firth.bpe import train_corpus
from firth.config import load_sections
from firth.io import write_folder, write_json, write_rows


def body(args) -> None:
    cfg, _ = load_sections("tokenizer", stage_cli.params_path(args))
    kind = args.kind
    trained = train_corpus(args.data, kind, cfg)

    def fill(folder):
        trained.tokenizer.save(str(folder / "tokenizer.json"))
        settings = json.dumps(trained.settings, indent=2)
        (folder / "config.json").write_text(settings + "\n")

    write_folder(args.out, fill)
    write_rows(args.table, *trained.table())
    write_json(args.stats, trained.summary)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("kind", choices=["text", "parallel"])
    stage_cli.path(p, "data", "the subsampled splits to train on")
    stage_cli.path(p, "out", "the tokenizer folder to write")
    stage_cli.path(p, "table", "tokens per line against vocabulary size (CSV)")
    stage_cli.path(p, "stats", "the tokenizer's summary (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
