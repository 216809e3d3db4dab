"""DVC stage prepare-parallel: data/raw/parallel/<source>/pairs.tsv ->
data/prepared/parallel/{train,valid,test}.tsv."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_sections, load_sources
from firth.errors import ConfigError
from firth.io import atomic_path, write_json
from firth.prepare.parallel import prepare_parallel
from firth.sources.provenance import checked_raw


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg, _seed = load_sections("prepare_parallel", path)
    sources = load_sources("parallel", path)
    if cfg.source not in sources:
        raise ConfigError(
            f"{path}: key 'prepare_parallel.source': {cfg.source!r} is not "
            f"in sources.parallel (have: {', '.join(sources) or 'none'})"
        )
    raw = args.raw / cfg.source
    provenance = checked_raw(raw)  # before reading it
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        stats = prepare_parallel(
            raw / "pairs.tsv",
            tmp,
            max_len=cfg.max_len,
            max_ratio=cfg.max_ratio,
            split_mod=cfg.split_mod,
            test_residue=cfg.test_residue,
            valid_residue=cfg.valid_residue,
        )
    stats["source"] = cfg.source
    stats["provenance"] = provenance
    write_json(args.stats, stats)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    stage_cli.path(p, "raw", "the fetched parallel sources (one folder per source)")
    stage_cli.path(p, "out", "the prepared splits to write")
    stage_cli.path(p, "stats", "the preparation statistics (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
