"""What DVC itself costs per command and per stage on this project's dvc.lock.

    python benchmarks/dvc_overhead.py [--project DIR] [--repeat N]

Every stage's code is its script's import closure (issue 21), listed once per
script in the code-<script> manifest stages (it was once per stage: some 2,500
entries), and DVC reads dvc.lock with ruamel.yaml: once per command (the
"safe" loader, C when ruamel.yaml.clib is installed, pure Python when not) and
once more per stage it runs, when it rewrites the file (the round-trip loader and
dumper, pure Python either way). This times each of those on the project's own
lock file, and two whole commands that run no stage (``dvc status`` and
``dvc repro --dry`` of one stage) with and without the C loader, in fresh
processes, median of ``--repeat``;
benchmarks/results/dvc_overhead.json.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from common import machine, repeat_seconds, write_result

from firth.code_deps import is_code

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn, repeat: int) -> float:
    return round(statistics.median(repeat_seconds(fn, repeat)), 3)


def yaml_costs(lock: Path, repeat: int) -> dict:
    from ruamel.yaml import YAML

    text = lock.read_text()
    try:
        import _ruamel_yaml  # noqa: F401  (ruamel.yaml.clib's C extension)

        clib = True
    except ImportError:
        clib = False
    rt = YAML()  # what DVC's lock update (modify_yaml) uses
    rt.default_flow_style = False
    data = rt.load(text)

    def dump():
        rt.dump(data, io.StringIO())

    return {
        "clib_installed": clib,
        "safe_load_c": _timed(lambda: YAML(typ="safe").load(text), repeat)
        if clib
        else None,
        "safe_load_pure_python": _timed(
            lambda: YAML(typ="safe", pure=True).load(text), repeat
        ),
        "round_trip_load": _timed(lambda: YAML().load(text), repeat),
        "round_trip_dump": _timed(dump, repeat),
    }


# `dvc ARGS` in a fresh interpreter; with "pure", ruamel.yaml cannot find its C
# loader (as when ruamel.yaml.clib is not installed)
DVC = (
    "import sys\n"
    "if sys.argv.pop(1) == 'pure':\n"
    "    sys.modules['_ruamel_yaml'] = None\n"
    "from dvc.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def command_seconds(args: list[str], cwd: Path, repeat: int, *, pure: bool) -> float:
    cmd = [sys.executable, "-c", DVC, "pure" if pure else "c", *args]

    def once():
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(
                f"dvc {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}"
            )

    return _timed(once, repeat)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--project", type=Path, default=ROOT)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/dvc_overhead.json"
    )
    args = p.parse_args()
    import yaml

    lock_path = args.project / "dvc.lock"
    lock = yaml.load(lock_path.read_text(), Loader=yaml.CSafeLoader)["stages"]
    code = sum(
        1
        for entry in lock.values()
        for dep in entry.get("deps", [])
        if is_code(dep["path"].lstrip("./"))  # (a profile's deps start ../../)
    )
    stage = next(iter(lock))
    costs = yaml_costs(lock_path, args.repeat)
    result = {
        "machine": machine(),
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/dvc_overhead.py",
        "project": args.project.resolve().relative_to(ROOT).as_posix() or ".",
        "lock": {
            "bytes": lock_path.stat().st_size,
            "stages": len(lock),
            "code_dep_entries": code,
        },
        "yaml_seconds": costs,
        # per stage dvc repro runs, it loads and dumps the lock round-trip
        "per_stage_lock_update_seconds": round(
            costs["round_trip_load"] + costs["round_trip_dump"], 3
        ),
        # whole commands that run no stage, with the C loader and without it
        "commands_seconds": {
            f"dvc {' '.join(cmd)}": {
                loader: command_seconds(
                    cmd, args.project, args.repeat, pure=loader == "pure_python"
                )
                for loader in ("c", "pure_python")
            }
            for cmd in (["status", stage], ["repro", "--dry", "-s", stage])
        },
    }
    write_result(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
