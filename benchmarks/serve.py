"""`firth serve` under a bounded load: a server on 127.0.0.1 (uvicorn, the app's
default limits but a ``--seconds`` time budget) over a trained project,
``--clients`` clients sending ``--requests`` requests each (translate, tag,
neighbours, generate, in turn), while one client sends a body over the limit,
which must get 413, and another asks for more than the time budget (a beam of 16
over a 4,000-character line), which must get 503 when the budget runs out, its
worker process killed. Records requests/s, p50/p99 latency of the answered
requests per endpoint and overall, the status counts, the 503s (the server's
back-pressure), any answer later than the budget plus the wait for a worker, and
any error (another 5xx, a failed connection) in benchmarks/results/serve.json.

    FIRTH_PROJECT=/path/to/trained/clone python benchmarks/serve.py
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import head_commit, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(os.environ.get("FIRTH_PROJECT", ROOT))

ASKS = [
    ("/api/translate", {"run": "bahdanau", "text": "In the beginning God created"}),
    ("/api/tag", {"run": "wnut16-crf", "text": "going to new york tomorrow"}),
    ("/api/neighbours", {"method": "sgns", "words": ["god", "king"], "k": 5}),
    ("/api/generate", {"run": "kn5", "prompt": "the king", "samples": 2}),
]


REASONS: Counter = Counter()  # why each 503 came: busy (no worker) or time budget


def _post(base: str, path: str, body: bytes) -> tuple[int, float]:
    req = urllib.request.Request(
        base + path, data=body, headers={"Content-Type": "application/json"}
    )
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as exc:
        status = exc.code
        if status == 503:
            detail = json.loads(exc.read() or b"{}").get("detail", "")
            REASONS["time budget" if "time budget" in detail else "busy"] += 1
    except (urllib.error.URLError, OSError):
        status = -1  # refused or reset
    return status, time.perf_counter() - t0


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--requests", type=int, default=10, help="per client")
    p.add_argument(
        "--seconds", type=float, default=15.0, help="the server's time budget"
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/serve.json"))
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    import uvicorn

    from firth.query.web import Limits, make_app

    limits = Limits(seconds=args.seconds)
    app = make_app(PROJECT, limits)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    alone = {}  # each request once, nothing else running: its own cost
    for path, ask in ASKS:
        status, alone[path] = _post(base, path, json.dumps(ask).encode())
        if status != 200:
            raise SystemExit(f"{path}: {status} on a request alone")

    def client(i: int) -> list[tuple[str, int, float]]:
        out = []
        for j in range(args.requests):
            path, ask = ASKS[(i + j) % len(ASKS)]
            status, seconds = _post(base, path, json.dumps(ask).encode())
            out.append((path, status, seconds))
        return out

    oversized = json.dumps(
        {"run": "wnut16-crf", "text": "x " * (limits.body_bytes)}
    ).encode()
    line = "And God said , Let there be light : and there was light . " * 70
    too_long = json.dumps(
        {"run": ASKS[0][1]["run"], "text": line[: limits.chars], "beam": limits.beam}
    ).encode()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.clients + 2) as pool:
        big = pool.submit(_post, base, "/api/tag", oversized)
        slow = pool.submit(_post, base, "/api/translate", too_long)
        rows = [r for rs in pool.map(client, range(args.clients)) for r in rs]
        big_status, big_seconds = big.result()
        slow_status, slow_seconds = slow.result()
    wall = time.perf_counter() - t0
    stopped = app.state.pool.stopped
    server.should_exit = True
    thread.join(timeout=10)
    ok = [s for _, status, s in rows if status == 200]
    by_path = {}
    for path, _ in ASKS:
        times = [s for pth, st, s in rows if pth == path and st == 200]
        by_path[path] = {
            "requests": sum(1 for pth, _, _ in rows if pth == path),
            "alone_seconds": round(alone[path], 4),
            "p50_seconds": round(statistics.median(times), 4) if times else None,
            "p99_seconds": round(_pct(times, 0.99), 4) if times else None,
        }
    result = {
        "command": "python benchmarks/serve.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine(),
        "commit": head_commit(ROOT),
        "models_from": head_commit(PROJECT),
        "limits": limits.model_dump(mode="json"),
        "clients": args.clients,
        "requests": len(rows),
        "wall_seconds": round(wall, 2),
        "requests_per_second": round(len(rows) / wall, 2),
        "p50_seconds": round(statistics.median(ok), 4) if ok else None,
        "p99_seconds": round(_pct(ok, 0.99), 4) if ok else None,
        "max_seconds": round(max(ok), 4) if ok else None,
        "status_counts": dict(Counter(str(st) for _, st, _ in rows)),
        # 503: the designed back-pressure (more than ``concurrent`` computing
        # past ``wait_seconds``); an error is any other 5xx or a failed connection
        "busy_503": sum(1 for _, st, _ in rows if st == 503),
        # every 503, the over-budget request's included, by its reason
        "503_reasons": dict(REASONS),
        "errors": sum(1 for _, st, _ in rows if (st >= 500 and st != 503) or st < 0),
        # an answer may wait for a worker (wait_seconds), then compute (seconds)
        "past_budget": sum(
            1 for _, st, s in rows if s > limits.seconds + limits.wait_seconds
        ),
        "over_budget": {
            "ask": f"translate, beam {limits.beam}, {limits.chars} characters",
            "status": slow_status,
            "seconds": round(slow_seconds, 4),
            "workers_killed": stopped,
        },
        "oversized": {
            "bytes": len(oversized),
            "status": big_status,
            "seconds": round(big_seconds, 4),
        },
        "endpoints": by_path,
    }
    print(json.dumps(result, indent=2))
    write_result(args.out, result)


if __name__ == "__main__":
    main()
