"""The broker: Dramatiq, bound to the broker each TrueMem configures, one actor.

The broker only carries a job's key (the row in the ``jobs`` table says what
to do, see ``storage/outbox.py``), so one actor serves every kind of job.

* Embedded (no Redis URL): a ``StubBroker`` and an in-process ``Worker``.
* Production: a ``RedisBroker``; ``truemem worker`` processes run the actor.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import dramatiq
from dramatiq.brokers.stub import StubBroker

from truemem_core.errors import InvalidInputError, require
from truemem_core.settings import Settings

log = logging.getLogger("truemem.jobs")

QUEUE = "truemem"
ACTOR = "truemem_run_job"


def check_redis_url(url: str) -> str:
    """Reject a Redis URL that cannot work before anything is written."""
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
        raise InvalidInputError(
            f"not a Redis URL: {url!r} (expected redis://host:port/db, rediss://… or unix://…)")
    require("redis", "redis")
    import redis

    try:
        redis.connection.parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:
        raise InvalidInputError(f"not a Redis URL: {url!r} ({exc})") from exc
    return url


class JobQueue:
    """One broker, one actor: ``perform(key)`` runs the job with that key."""

    def __init__(
        self, redis_url: str | None, perform: Callable[[str], None], settings: Settings
    ) -> None:
        # What a failed send raises. Embedded, redis is never imported: that import takes
        # tens of milliseconds on the event loop, in the first call that queues a job.
        self._errors: tuple[type[BaseException], ...] = (dramatiq.errors.DramatiqError, OSError)
        if redis_url:
            import redis
            from dramatiq.brokers.redis import RedisBroker

            self.broker: dramatiq.Broker = RedisBroker(url=check_redis_url(redis_url))  # type: ignore[no-untyped-call]
            self._errors += (redis.exceptions.RedisError,)
        else:
            self.broker = StubBroker()
        self.actor = dramatiq.actor(
            broker=self.broker,
            actor_name=ACTOR,
            queue_name=QUEUE,
            max_retries=settings.job_max_retries,
            min_backoff=settings.job_min_backoff_ms,
            max_backoff=settings.job_min_backoff_ms * 60,
        )(perform)
        self._worker: dramatiq.Worker | None = None

    def send(self, key: str) -> bool:
        """Hand a job to the broker; False (and the job stays pending) if it is down."""
        try:
            self.actor.send(key)
        except self._errors as exc:
            log.warning("could not enqueue %s (it stays pending and will be re-sent): %s",
                        key, exc)
            return False
        return True

    def start_worker(self, threads: int = 1) -> None:
        if self._worker is None:
            self._worker = dramatiq.Worker(self.broker, worker_threads=threads, worker_timeout=100)
            self._worker.start()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop(timeout=10_000)
            self._worker = None
        self.broker.close()
