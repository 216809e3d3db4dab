"""`firth serve`'s worker processes (firth.query.workers): a question over the
time budget gets OverTime and its computation is stopped (the worker process is
gone, not left computing), a fresh worker answers the next one; a FirthError
comes back as itself, any other failure as WorkerFailed without a traceback;
with every worker busy past the wait, Busy."""

from __future__ import annotations

import asyncio
import time

import pytest

from firth.errors import FirthError
from firth.query.workers import Busy, OverTime, Pool, WorkerFailed


def run(coro):
    return asyncio.run(coro)


def test_a_question_over_budget_is_stopped_and_the_next_is_answered():
    async def go():
        pool = Pool(1, seconds=1.0, threads=1)
        try:
            await pool.start()
            [first] = pool._workers
            t0 = time.perf_counter()
            with pytest.raises(OverTime):
                # minutes of pure CPU work in the worker, were it not stopped
                await pool.ask("math:factorial", 10**8, wait=5)
            took = time.perf_counter() - t0
            assert took < 5, took
            # the computation is gone with its process, not running on unseen
            assert not first.process.is_alive()
            assert first.process.exitcode is not None
            assert pool.stopped == 1
            assert await pool.ask("math:sqrt", 16.0, wait=5) == 4.0
            [second] = pool._workers
            assert second is not first and second.process.is_alive()
        finally:
            pool.close()

    run(go())


def test_errors_come_back_as_one_line_and_the_worker_survives_them(tmp_path):
    async def go():
        pool = Pool(1, seconds=60.0, threads=1)
        try:
            missing = tmp_path / "params.yaml"
            with pytest.raises(FirthError, match="params.yaml"):
                await pool.ask("firth.config:read_params", missing, wait=60)
            [worker] = pool._workers
            with pytest.raises(WorkerFailed, match="^ValueError$"):
                await pool.ask("math:sqrt", -1.0, wait=5)
            assert pool._workers == {worker} and worker.process.is_alive()
            with pytest.raises(WorkerFailed, match="exited"):
                await pool.ask("os:_exit", 3, wait=5)
            assert not worker.process.is_alive()
            assert await pool.ask("math:sqrt", 9.0, wait=60) == 3.0
        finally:
            pool.close()

    run(go())


def test_a_question_waits_for_a_worker_then_gets_busy():
    async def go():
        pool = Pool(1, seconds=60.0, threads=1)
        try:
            await pool.start()
            slow = asyncio.create_task(pool.ask("time:sleep", 2.0, wait=1))
            await asyncio.sleep(0.2)
            with pytest.raises(Busy):
                await pool.ask("math:sqrt", 1.0, wait=0.3)
            await slow
            # the slot came back: the next question waits, then is answered
            assert await pool.ask("math:sqrt", 1.0, wait=5) == 1.0
        finally:
            pool.close()

    run(go())


def test_a_new_event_loop_keeps_the_idle_workers():
    # a server restarted in one process (or a test client entered twice) runs
    # a new event loop: the slots are made again there, the workers kept
    pool = Pool(1, seconds=60.0, threads=1)
    try:
        run(pool.start())
        [worker] = pool._workers
        assert run(pool.ask("os:getpid", wait=5)) == worker.process.pid
        run(pool.start())
        assert pool._workers == {worker}
        assert run(pool.ask("os:getpid", wait=5)) == worker.process.pid
    finally:
        pool.close()
