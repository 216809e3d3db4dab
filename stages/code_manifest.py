"""DVC stage code-<script>: the manifest of a stage script's code, every file of its
import closure with its md5 (firth.code_deps.manifest). The stages that run the
script depend on this one file instead of listing the closure each."""

from __future__ import annotations

from pathlib import Path

from firth import stage_cli
from firth.code_deps import manifest
from firth.io import write_json


def body(args) -> None:
    script = Path(args.script)
    # the repository root is the folder above stages/, wherever the project is
    root = script.resolve().parents[1]
    write_json(args.out, manifest(root, script.resolve().relative_to(root).as_posix()))


def main(argv=None) -> None:
    p = stage_cli.parser(__doc__)
    p.add_argument("script", help="the stage script, e.g. stages/train_lm.py")
    p.add_argument("out", type=Path, help="the manifest to write (JSON)")
    stage_cli.run(body, p, argv)


if __name__ == "__main__":
    main()
