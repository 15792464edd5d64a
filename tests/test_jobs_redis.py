"""Background jobs on a real Redis with real ``truemem worker`` processes.

Fault tests: the broker down while recording, a worker killed mid-job, and
the same job delivered twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import services
from sqlalchemy import select

from truemem_core import TrueMem
from truemem_core.storage.schema import jobs, messages

TESTS = Path(__file__).parent


@contextmanager
def worker(
    database_url: str, redis_url: str, *, llm: str | None = None, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "truemem_core.cli", "--database", database_url,
            "worker", "--redis-url", redis_url, "--threads", "1"]
    if llm:
        argv += ["--llm", llm]
    environment = {**os.environ, "PYTHONPATH": str(TESTS), "TRUEMEM_SWEEP_INTERVAL_S": "0.5",
                   "TRUEMEM_JOB_MIN_BACKOFF_MS": "100", **env}
    process = subprocess.Popen(argv, env=environment)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _statuses(memory: TrueMem) -> dict[str, str]:
    async def run() -> dict[str, str]:
        async with memory._core.db.transaction() as conn:
            return {r.key: r.status for r in await conn.execute(select(jobs.c.key, jobs.c.status))}

    return memory._loop.run(run())


def _message_count(memory: TrueMem) -> int:
    async def run() -> int:
        async with memory._core.db.transaction() as conn:
            return len((await conn.execute(select(messages.c.id))).all())

    return memory._loop.run(run())


def test_worker_process_runs_extraction(tmp_url: str, redis_url: str) -> None:
    with TrueMem(tmp_url, redis_url=redis_url) as memory, worker(tmp_url, redis_url):
        memory.record("ana", "s", "I'm a carpenter and I live in Porto.", "Cool.")
        memory.drain(timeout=60)
        texts = " ".join(m.text for m in memory.list_memories("ana"))
        assert "carpenter" in texts and "Porto" in texts


def test_broker_outage_loses_nothing(
    tmp_url: str, redis_server: services.RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    with TrueMem(tmp_url, redis_url=redis_server.url) as memory:
        redis_server.stop()
        recorded = memory.record("ana", "s", "I'm a carpenter and I live in Porto.", "Cool.")
        assert _message_count(memory) == 2  # committed although the broker is down
        assert set(_statuses(memory).values()) == {"pending"}
        assert set(_statuses(memory)) == set(recorded.jobs)
        assert "could not enqueue" in caplog.text
        redis_server.start()
        with worker(tmp_url, redis_server.url):
            memory.drain(timeout=60)
        assert set(_statuses(memory).values()) == {"done"}
        assert any("Porto" in m.text for m in memory.list_memories("ana"))


def test_worker_killed_mid_job_then_retry_completes(
    tmp_url: str, redis_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "llm-called"
    llm = "scripted_llm:slow"
    with TrueMem(tmp_url, redis_url=redis_url) as memory:
        with worker(tmp_url, redis_url, llm=llm, TRUEMEM_TEST_MARKER=str(marker),
                    TRUEMEM_TEST_DELAY="30") as doomed:
            recorded = memory.record("ana", "s", "I keep the lighthouse.", "Lovely.")
            deadline = time.monotonic() + 60
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert marker.exists(), "the worker never started the job"
            doomed.kill()  # SIGKILL in the middle of the job
            doomed.wait()
        assert _statuses(memory)[recorded.jobs[0]] == "pending"
        assert memory.list_memories("ana") == []
        assert _message_count(memory) == 2
        with worker(tmp_url, redis_url, llm=llm, TRUEMEM_TEST_DELAY="0"):
            memory.drain(timeout=60)
        assert [m.text for m in memory.list_memories("ana")] == ["Works as a lighthouse keeper"]


def test_same_job_delivered_twice(tmp_url: str, redis_url: str) -> None:
    with TrueMem(tmp_url, redis_url=redis_url) as memory:
        recorded = memory.record("ana", "s", "I'm a carpenter.", "Cool.")
        key = recorded.jobs[0]
        memory._core.jobs.queue().send(key)  # a duplicate delivery
        memory._core.jobs.queue().send(key)
        with worker(tmp_url, redis_url):
            memory.drain(timeout=60)
            time.sleep(1)  # let the duplicates run too
        stored = memory.list_memories("ana")
        assert len(stored) == 1 and stored[0].reinforcements == 0

