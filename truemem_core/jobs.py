"""Background jobs on Dramatiq, bound to the broker each TrueMem configures.

Work is first written to the ``jobs`` table in the same transaction as the
data it concerns (an outbox); the broker only carries the job's key. A send
that fails (Redis down) leaves the job pending, and a sweep re-sends pending
jobs, so nothing accepted is lost. Running a job twice is harmless: a job
that is no longer pending is skipped, and its effects commit together with
its status.

* Embedded (no Redis URL): a ``StubBroker`` and an in-process ``Worker``.
* Production: a ``RedisBroker``; ``truemem worker`` processes run the actors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker

from .errors import require
from .settings import Settings

log = logging.getLogger("truemem.jobs")

QUEUE = "truemem"
KINDS = ("extract", "summarize", "prune")


def _send_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [dramatiq.errors.DramatiqError, OSError]
    try:
        import redis

        errors.append(redis.exceptions.RedisError)
    except ImportError:
        pass
    return tuple(errors)


class JobQueue:
    """One broker with one actor per job kind; ``perform(key)`` runs a job."""

    def __init__(
        self, redis_url: str | None, perform: Callable[[str], None], settings: Settings
    ) -> None:
        self.redis_url = redis_url
        if redis_url:
            require("redis", "redis")
            from dramatiq.brokers.redis import RedisBroker

            self.broker: dramatiq.Broker = RedisBroker(url=redis_url)  # type: ignore[no-untyped-call]
        else:
            self.broker = StubBroker()
        self.actors = {
            kind: dramatiq.actor(
                broker=self.broker,
                actor_name=f"truemem_{kind}",
                queue_name=QUEUE,
                max_retries=settings.job_max_retries,
                min_backoff=settings.job_min_backoff_ms,
                max_backoff=settings.job_min_backoff_ms * 60,
            )(perform)
            for kind in KINDS
        }
        self._errors = _send_errors()
        self._worker: dramatiq.Worker | None = None

    def send(self, kind: str, key: str) -> bool:
        """Hand a job to the broker; False (and the job stays pending) if it is down."""
        try:
            self.actors[kind].send(key)
        except self._errors as exc:
            log.warning("could not enqueue %s (it stays pending and will be re-sent): %s",
                        key, exc)
            return False
        return True

    def start_worker(self, threads: int = 1) -> None:
        if self._worker is None:
            self._worker = dramatiq.Worker(self.broker, worker_threads=threads, worker_timeout=100)
            self._worker.start()

    @property
    def has_worker(self) -> bool:
        return self._worker is not None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop(timeout=10_000)
            self._worker = None
        self.broker.close()


def describe(job: Any) -> str:
    return f"{job.kind} job {job.key} (attempt {job.attempts + 1})"
