"""The ``firth`` command line (typer)."""

from __future__ import annotations

from pathlib import Path

import typer

from firth.config import SECTIONS, check_top_level, load_section, load_sources
from firth.errors import FirthError
from firth.sources.registry import REGISTRY

app = typer.Typer(
    help="Firth: the classic neural NLP canon, honestly evaluated.",
    no_args_is_help=True,
)


@app.command()
def sources() -> None:
    """List the registered data sources with their origin and licence."""
    for name, reg in sorted(REGISTRY.items()):
        where = reg.package or reg.url or reg.id
        typer.echo(f"{name:<18} {reg.kind:<8} {reg.format:<11} {where}")
        typer.echo(f"{'':<18} {reg.license}")
    typer.echo(
        "also: bible:<VERSION>, bible-pair:<SRC>-<TGT>, local:<path>, "
        "or a mapping with kind url|hf|local"
    )


@app.command("check-params")
def check_params(path: Path = Path("params.yaml")) -> None:
    """Validate every section of a params file; print the first error on one line."""
    try:
        check_top_level(path)
        for name in SECTIONS:
            load_section(name, path)
        for group in ("text", "parallel", "tagged", "eval"):
            load_sources(group, path)
    except FirthError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{path}: ok")


if __name__ == "__main__":
    app()
