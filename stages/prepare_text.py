"""DVC stage prepare-text: data/raw/text/* -> data/prepared/text/{split}.txt."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_sections, load_sources
from firth.io import atomic_path, write_json
from firth.prepare.text import prepare_text
from firth.sources.provenance import checked_raw


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg, seed = load_sections("prepare_text", path)
    names = list(load_sources("text", path))
    raw = {n: args.raw / n for n in names}
    provenance = {n: checked_raw(raw[n]) for n in names}  # before reading
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        stats = prepare_text(
            raw,
            tmp,
            seed=seed,
            lowercase=cfg.lowercase,
            valid_fraction=cfg.valid_fraction,
            test_fraction=cfg.test_fraction,
            min_tokens=cfg.min_tokens,
        )
    stats["provenance"] = provenance
    write_json(args.stats, stats)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    stage_cli.path(p, "raw", "the fetched text sources (one folder per source)")
    stage_cli.path(p, "out", "the prepared splits to write")
    stage_cli.path(p, "stats", "the preparation statistics (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
