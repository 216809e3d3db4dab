"""Time each DVC stage of a long `dvc repro` and keep the times across resumed runs.

    python benchmarks/stage_seconds.py OUT.json -- dvc repro [args]

runs the command, passes its output through unchanged, and merges the wall
seconds of every stage it ran into OUT.json (``{"stages": {name: {"seconds",
"commit", "measured"}}}``); a stage's time runs from DVC's "Running stage" line to
the next one or to the command's end. A run that is interrupted or fails keeps the
seconds its last stage had run as ``partial_seconds``; when a later run finishes
that stage (a training stage resumes from its checkpoint), the two are added.
``make run-full`` runs the full profile through it
(benchmarks/results/full_stage_seconds.json, read by ``benchmarks/dag.py
simulate``). ``--log FILE`` also writes each output line prefixed with the epoch
time; ``--from-log FILE`` merges such a log instead of running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

STAGE = re.compile(r"Running stage '([^']+)'")


def spans(events: list[tuple[float, str]], end: float) -> list[tuple[str, float, bool]]:
    """(stage, seconds, finished) from (time, line) events: each stage until the
    next stage starts; the last one until ``end`` (finished only if the run ended
    well, which the caller says by appending a ("", end) event)."""
    starts = [(t, m.group(1)) for t, line in events if (m := STAGE.search(line))]
    done = [t for t, line in events if line == ""]
    out = []
    for i, (t, name) in enumerate(starts):
        if i + 1 < len(starts):
            out.append((name, starts[i + 1][0] - t, True))
        else:
            out.append((name, (done[0] if done else end) - t, bool(done)))
    return out


def merge(out: Path, rows: list[tuple[str, float, bool]], commit: str) -> dict:
    record = json.loads(out.read_text()) if out.exists() else {"stages": {}}
    when = datetime.now(UTC).isoformat(timespec="seconds")
    for name, seconds, finished in rows:
        old = record["stages"].get(name, {})
        if finished:
            total = seconds + old.get("partial_seconds", 0.0)
            record["stages"][name] = {
                "seconds": round(total, 1),
                "commit": commit,
                "measured": when,
            }
        else:
            kept = {k: v for k, v in old.items() if k != "partial_seconds"}
            kept["partial_seconds"] = round(seconds + old.get("partial_seconds", 0), 1)
            record["stages"][name] = kept
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(out)
    return record


def run(cmd: list[str], log: Path | None) -> tuple[list[tuple[float, str]], int]:
    events: list[tuple[float, str]] = []
    sink = log.open("a", buffering=1) if log else None  # line by line: survives a kill
    # DVC and its stage run in their own process group, so that an interrupt
    # (Ctrl-C, or SIGTERM from `kill` or a scheduler; a background job ignores
    # SIGINT) reaches them once, from here, as the SIGINT DVC handles; what they
    # print while stopping still passes through, and the stage's partial seconds
    # are merged by the caller.
    # A job started with `&` from a script inherits SIGINT ignored, and ignored
    # signals stay ignored across exec: handle it here, so that DVC and its stage
    # start with SIGINT's default again.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    assert proc.stdout is not None
    stream = proc.stdout
    buffer = b""

    def pump() -> None:
        nonlocal buffer
        while chunk := stream.read1(65536):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            buffer += chunk
            *lines, buffer = re.split(rb"[\r\n]", buffer)
            now = time.time()
            for raw in lines:
                line = raw.decode(errors="replace")
                if STAGE.search(line):
                    events.append((now, line))
                if sink and line.strip():
                    sink.write(f"{now:.1f} {line}\n")

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        try:
            pump()
        except KeyboardInterrupt:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.killpg(proc.pid, signal.SIGINT)
            # a minute to stop cleanly (DVC unlocks, the stage checkpoints), then
            # the whole group is killed
            timer = threading.Timer(60, os.killpg, (proc.pid, signal.SIGKILL))
            timer.start()
            pump()
            timer.cancel()
        code = proc.wait()
    finally:
        if sink:
            sink.close()
    if code == 0:
        events.append((time.time(), ""))
    return events, code


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--log", type=Path)
    p.add_argument("--from-log", type=Path)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, cmd = p.parse_args(argv[:cut]), argv[cut + 1 :]
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    if args.from_log:
        events = []
        for line in args.from_log.read_text(errors="replace").splitlines():
            stamp, _, rest = line.partition(" ")
            try:
                events.append((float(stamp), rest))
            except ValueError:
                continue
        # a log that reached "=== ... done" (the end of a resumed run) finished
        ends = [(t, "") for t, rest in events if re.match(r"=== .* done$", rest)]
        rows = spans(events + ends, events[-1][0] if events else 0.0)
        merge(args.out, rows, commit)
        return
    if not cmd:
        p.error("no command to run (put it after --)")
    events, code = run(cmd, args.log)
    merge(args.out, spans(events, time.time()), commit)
    sys.exit(code)


if __name__ == "__main__":
    main()
