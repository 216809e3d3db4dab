"""DVC stage prepare-tagged@<name>: data/raw/tagged/<name> ->
data/prepared/tagged/<name>/{train,valid,test}.conll."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_sections, load_sources
from firth.errors import ConfigError
from firth.io import atomic_path, write_json
from firth.prepare.tagged import prepare_tagged
from firth.sources.checks import check_mostly_bio
from firth.sources.provenance import checked_raw


def body(args) -> None:
    path = stage_cli.params_path(args)
    cfg, seed = load_sections("prepare_tagged", path)
    if args.name not in load_sources("tagged", path):
        raise ConfigError(f"{path}: no source 'sources.tagged.{args.name}'")
    raw = args.raw
    provenance = checked_raw(raw)  # before reading it
    check_mostly_bio(sorted(raw.glob("*.conll")))
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        stats = prepare_tagged(
            raw,
            tmp,
            seed=seed,
            valid_fraction=cfg.valid_fraction,
            test_fraction=cfg.test_fraction,
            repair=cfg.repair_bio,
            dedup=cfg.dedup,
        )
    stats["provenance"] = provenance
    write_json(args.stats, stats)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("name")
    stage_cli.path(p, "raw", "the fetched source (data/raw/tagged/<name>)")
    stage_cli.path(p, "out", "the prepared splits to write")
    stage_cli.path(p, "stats", "the preparation statistics (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
