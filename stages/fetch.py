"""DVC stage fetch-<group>@<name>: fetch one source into data/raw/<group>/<name>/,
and commit its provenance record (SOURCE.json) as reports/sources/<group>/<name>.json
so the report is built from committed files only. That copy persists (DVC keeps it
while the stage runs): on a fresh clone the fetch reads it as the previous record,
so the same bytes keep their first retrieval time and the raw folder's hash."""

from __future__ import annotations

from firth import stage_cli
from firth.config import load_sources
from firth.errors import ConfigError, DataError
from firth.io import write_json
from firth.sources.fetch import fetch

GROUP_FORMATS = {
    "text": {"text"},
    "parallel": {"parallel"},
    "tagged": {"tagged"},
    "eval": {"analogy", "similarity"},
    "nli": {"nli"},
}


def body(args) -> None:
    sources = load_sources(args.group, stage_cli.params_path(args))
    if args.name not in sources:
        raise ConfigError(
            f"params.yaml: no source 'sources.{args.group}.{args.name}' "
            f"(have: {', '.join(sources) or 'none'})"
        )
    record = fetch(
        args.name,
        sources[args.name],
        args.out,
        cache_dir=args.cache,
        previous=args.record,
    )
    if record["format"] not in GROUP_FORMATS[args.group]:
        raise DataError(
            f"sources.{args.group}.{args.name}: a {record['format']} source "
            f"cannot serve the {args.group} group"
        )
    write_json(args.record, record)


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("group", choices=sorted(GROUP_FORMATS))
    p.add_argument("name")
    stage_cli.path(p, "out", "the raw folder to fill (data/raw/<group>/<name>)")
    stage_cli.path(p, "record", "its committed provenance record (JSON)")
    stage_cli.path(p, "cache", "download cache, outside DVC's outputs")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
