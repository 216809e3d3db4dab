"""Questions answered in worker processes, so that one over its time budget is
stopped, not only its reply abandoned: `firth serve` keeps ``size`` workers (each
loads the models it is asked about once, firth.query.loaded), gives each question
to an idle one, and kills a worker whose answer has not come within ``seconds``
(its computation ends with it; a fresh worker takes its place on the next
question). A thread cannot be stopped from outside in Python, and a decoder's
matrix products do not look at a flag, so a process is the unit that can be.

A question names its function as ``"module:function"`` and passes picklable
arguments; an answer is the function's return value, a FirthError comes back as
one (its message), and any other failure as WorkerFailed (the traceback goes to
the server's stderr, never to the client)."""

from __future__ import annotations

import asyncio
import importlib
import multiprocessing
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from firth.errors import FirthError

# imported by a worker before its first question
WARM = (
    "firth.query.embeddings",
    "firth.query.lm",
    "firth.query.tag",
    "firth.query.translate",
)
STARTUP_SECONDS = 300.0


class OverTime(Exception):
    """The question ran past the time budget; its worker was killed."""

    def __init__(self, seconds: float):
        super().__init__(f"over the time budget of {seconds:g} s")
        self.seconds = seconds


class Busy(Exception):
    """Every worker stayed busy for the whole wait."""


class WorkerFailed(Exception):
    """The function raised something other than FirthError, or the worker died."""


def _serve(conn, threads: int) -> None:
    """A worker's loop: import what the questions need (torch, the query
    modules: seconds, not counted against a question's budget), say so, then
    answer questions until the pipe closes."""
    import signal

    import torch

    # Ctrl-C reaches the whole process group: the server stops its workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(threads)
    for module in WARM:
        importlib.import_module(module)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            target, args, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        module, _, name = target.partition(":")
        try:
            value = getattr(importlib.import_module(module), name)(*args, **kwargs)
            reply = ("ok", value)
        except FirthError as exc:
            reply = ("firth", str(exc))
        except Exception as exc:  # a bug: its traceback to the server's log
            traceback.print_exc(file=sys.stderr)
            reply = ("failed", type(exc).__name__)
        conn.send(reply)


@dataclass(eq=False)
class Worker:
    process: multiprocessing.process.BaseProcess
    conn: object

    @classmethod
    def start(cls, threads: int) -> Worker:
        ctx = multiprocessing.get_context("spawn")  # no fork of a threaded server
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child, threads), daemon=True)
        process.start()
        child.close()
        worker = cls(process, parent)
        if not parent.poll(STARTUP_SECONDS) or parent.recv()[0] != "ready":
            worker.stop()
            raise WorkerFailed(f"worker not ready within {STARTUP_SECONDS:g} s")
        return worker

    def ask(self, job: tuple, seconds: float):
        """Send ``job``, wait up to ``seconds`` for the answer; past that, kill
        this worker and raise OverTime."""
        self.conn.send(job)
        if not self.conn.poll(seconds):
            self.stop()
            raise OverTime(seconds)
        try:
            kind, value = self.conn.recv()
        except (EOFError, OSError):
            self.stop()
            raise WorkerFailed(
                f"worker exited (code {self.process.exitcode})"
            ) from None
        if kind == "firth":
            raise FirthError(value)
        if kind == "failed":
            raise WorkerFailed(value)
        return value

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()

    @property
    def alive(self) -> bool:
        return self.process.is_alive()


class Pool:
    """``size`` workers, started on first use; each question waits up to ``wait``
    seconds for an idle one (then Busy) and runs at most ``seconds`` (then
    OverTime, its worker killed). Each worker gets ``threads`` torch threads
    (default: this machine's cores shared between the workers)."""

    def __init__(self, size: int, seconds: float, threads: int | None = None):
        self.seconds = seconds
        self.threads = threads or max(1, (os.cpu_count() or 1) // size)
        self._slots: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.size = size
        self._workers: set[Worker] = set()
        self.stopped = 0  # workers killed over the time budget
        # one thread per worker waits on its pipe (the loop's default pool may
        # have fewer threads than a server has workers)
        self._threads = ThreadPoolExecutor(size, thread_name_prefix="firth-worker")

    def _queue(self) -> asyncio.Queue:
        """The idle slots, made in the running event loop (a server, or a test
        client run twice, may start a new loop: the slots are made again there,
        each idle worker kept)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:
            idle = [] if self._slots is None else self._drain(self._slots)
            self._slots, self._loop = asyncio.Queue(), loop
            for worker in idle:
                self._slots.put_nowait(worker)
            for _ in range(self.size - len(idle)):
                self._slots.put_nowait(None)  # a slot whose worker is not started
        return self._slots

    @staticmethod
    def _drain(slots: asyncio.Queue) -> list:
        out = []
        while not slots.empty():
            out.append(slots.get_nowait())
        return out

    async def ask(self, target: str, *args, wait: float, **kwargs):
        slots = self._queue()
        try:
            worker = await asyncio.wait_for(slots.get(), wait)
        except TimeoutError:
            raise Busy() from None
        loop = asyncio.get_running_loop()

        def run(worker: Worker | None):
            # in a thread, slot handed back here: a cancelled request (the client
            # went away) cannot free a worker that is still computing
            try:
                if worker is None or not worker.alive:
                    worker = Worker.start(self.threads)
                    self._workers.add(worker)
                return worker.ask((target, args, kwargs), self.seconds)
            except OverTime:
                self.stopped += 1
                raise
            finally:
                if worker is not None and not worker.alive:
                    self._workers.discard(worker)
                    worker = None
                try:
                    loop.call_soon_threadsafe(slots.put_nowait, worker)
                except RuntimeError:  # the server's loop closed meanwhile
                    pass

        return await loop.run_in_executor(self._threads, run, worker)

    async def start(self) -> None:
        """Start every idle slot's worker now (the server's start-up), not on
        first use."""
        slots = self._queue()
        loop = asyncio.get_running_loop()
        drained = self._drain(slots)  # the slots not answering a question now
        idle = [w for w in drained if w is not None and w.alive]
        started = await asyncio.gather(
            *(
                loop.run_in_executor(self._threads, Worker.start, self.threads)
                for _ in range(len(drained) - len(idle))
            )
        )
        for worker in [*idle, *started]:
            self._workers.add(worker)
            slots.put_nowait(worker)

    def close(self) -> None:
        for worker in list(self._workers):
            worker.stop()
        self._workers.clear()
