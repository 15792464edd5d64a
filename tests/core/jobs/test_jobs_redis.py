"""Background jobs on a real Redis with real ``truemem worker`` processes.

Fault tests: the broker down while recording, a worker killed mid-job, and
the same job delivered twice.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from pathlib import Path
from typing import Any

import pytest
import redis
import services
from db_access import rows
from sqlalchemy import select

from truemem_core import Settings, TrueMem
from truemem_core.jobs.broker import QUEUE, JobQueue
from truemem_core.storage.schema import jobs, messages

TESTS = Path(__file__).parents[2]  # where scripted_llm.py is


def wait_for(
    condition: Callable[[], bool], what: str, *, timeout: float = 60.0, interval: float = 0.05
) -> None:
    """Return as soon as ``condition()`` holds; fail saying ``what`` did not happen in time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting until {what}", pytrace=False)
        time.sleep(interval)


@pytest.fixture
def queue_url(redis_url: str) -> str:
    """``redis_url``, emptied: nothing left from an earlier test reaches this one.

    A worker killed mid-job leaves its message unacknowledged in Redis, to be
    delivered again later, to whichever worker listens then.
    """
    with closing(redis.Redis.from_url(redis_url)) as client:
        client.flushdb()
    return redis_url


def worker(
    database_url: str, redis_url: str, *, llm: str | None = None, **env: str
) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A ``truemem worker`` (one thread, ``llm`` if given) that can import the test modules."""
    return services.worker_process(
        database_url, redis_url, threads=1, options=["--llm", llm] if llm else [],
        env={"PYTHONPATH": str(TESTS), **env})


def _statuses(memory: TrueMem) -> dict[str, str]:
    return {r.key: r.status for r in rows(memory, select(jobs.c.key, jobs.c.status))}


def _message_count(memory: TrueMem) -> int:
    return len(rows(memory, select(messages.c.id)))


def test_worker_process_runs_extraction(store_url: str, queue_url: str) -> None:
    with TrueMem(store_url, redis_url=queue_url) as memory, worker(store_url, queue_url):
        memory.record("ana", "s", "I'm a carpenter and I live in Porto.", "Cool.")
        memory.drain(timeout=60)
        texts = " ".join(m.text for m in memory.list_memories("ana"))
        assert "carpenter" in texts and "Porto" in texts


def test_broker_outage_loses_nothing(
    store_url: str, redis_server: services.RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    with TrueMem(store_url, redis_url=redis_server.url) as memory:
        redis_server.stop()
        recorded = memory.record("ana", "s", "I'm a carpenter and I live in Porto.", "Cool.")
        assert _message_count(memory) == 2  # committed although the broker is down
        assert set(_statuses(memory).values()) == {"pending"}
        assert set(_statuses(memory)) == set(recorded.jobs)
        # sent after record returned, from the sender's thread: it fails, and says so
        wait_for(lambda: "could not enqueue" in caplog.text, "the failed send was logged")
        redis_server.start()
        with worker(store_url, redis_server.url):
            memory.drain(timeout=60)
        assert set(_statuses(memory).values()) == {"done"}
        assert any("Porto" in m.text for m in memory.list_memories("ana"))


def test_worker_killed_mid_job_then_retry_completes(
    store_url: str, queue_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "llm-called"
    llm = "scripted_llm:slow"
    with TrueMem(store_url, redis_url=queue_url) as memory:
        with worker(store_url, queue_url, llm=llm, TRUEMEM_TEST_MARKER=str(marker),
                    TRUEMEM_TEST_DELAY="30") as doomed:
            recorded = memory.record("ana", "s", "I keep the lighthouse.", "Lovely.")
            wait_for(marker.exists, "the worker started the job")
            doomed.kill()  # SIGKILL in the middle of the job
            doomed.wait()
        assert _statuses(memory)[recorded.jobs[0]] == "pending"
        assert memory.list_memories("ana") == []
        assert _message_count(memory) == 2
        with worker(store_url, queue_url, llm=llm, TRUEMEM_TEST_DELAY="0"):
            memory.drain(timeout=60)
        assert [m.text for m in memory.list_memories("ana")] == ["Works as a lighthouse keeper"]


def test_same_job_delivered_twice(store_url: str, queue_url: str) -> None:
    # A second producer on the same queue sends the key twice more: no public API
    # sends a job, and dramatiq delivers at least once, so a duplicate must be harmless.
    with (TrueMem(store_url, redis_url=queue_url) as memory,
          closing(JobQueue(queue_url, lambda key: None, Settings())) as producer):
        recorded = memory.record("ana", "s", "I'm a carpenter.", "Cool.")
        key = recorded.jobs[0]
        assert producer.send(key) and producer.send(key)
        broker: Any = producer.broker
        # the recorded jobs (sent from TrueMem's sender thread) and both duplicates wait
        wait_for(lambda: broker.do_qsize(QUEUE) >= 3, "the jobs and duplicates were queued")
        with worker(store_url, queue_url):
            memory.drain(timeout=60)
            # every delivery (the first and both duplicates) acknowledged, i.e. run
            wait_for(lambda: broker.do_qsize(QUEUE) == 0, "the worker ran every delivery")
        stored = memory.list_memories("ana")
        assert len(stored) == 1 and stored[0].reinforcements == 0
        assert _statuses(memory)[key] == "done"

