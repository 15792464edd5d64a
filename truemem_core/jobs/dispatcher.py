"""Getting jobs to a worker: enqueue after commit, re-send what stayed pending, drain.

A send that fails (Redis down) leaves the job pending, and a sweep re-sends
pending jobs, so nothing accepted is lost. Running a job twice is harmless
(see ``handlers``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from datetime import timedelta
from typing import Any

from truemem_core.errors import DrainTimeoutError
from truemem_core.jobs.broker import JobQueue
from truemem_core.settings import Settings
from truemem_core.storage import outbox
from truemem_core.storage.database import Database
from truemem_core.storage.schema import utcnow

log = logging.getLogger("truemem.jobs")

_SWEEP_BATCH = 500


class Dispatcher:
    """``run_on_loop(key)`` runs a job on TrueMem's loop from a worker thread."""

    def __init__(
        self, db: Database, settings: Settings, redis_url: str | None,
        run_job: Callable[[str], Coroutine[Any, Any, None]],
        run_on_loop: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self.db = db
        self.settings = settings
        self.redis_url = redis_url
        self._run_job = run_job
        self._run_on_loop = run_on_loop
        self._queue: JobQueue | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._mine: set[str] = set()  # jobs this instance queued or re-sent, for drain()
        self._unsent: set[str] = set()
        self._started = utcnow()
        self._first_sweep = asyncio.Event()

    def _perform(self, key: str) -> None:
        """The actor's body, on a Dramatiq worker thread."""
        self._run_on_loop(self._run_job(key))

    def queue(self) -> JobQueue:
        if self._queue is None:
            self._queue = JobQueue(self.redis_url, self._perform, self.settings)
            if not self.redis_url:  # embedded: the actor runs in this process
                self._start_worker()
        return self._queue

    def _start_worker(self, threads: int = 1) -> None:
        assert self._queue is not None
        self._queue.start_worker(threads)
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())

    async def serve(self, threads: int) -> None:
        """Run the actor in this process (``truemem worker``) until cancelled."""
        await self.db.open()
        self.queue()
        self._start_worker(threads)
        await asyncio.Event().wait()

    def enqueue(self, keys: Iterable[str]) -> None:
        """Send committed jobs; what cannot be sent now is re-sent by ``drain`` and the sweep."""
        for key in keys:
            self._mine.add(key)
            if self.queue().send(key):
                self._unsent.discard(key)
            else:
                self._unsent.add(key)

    async def _sweep_forever(self) -> None:
        """Re-send jobs that stayed pending (lost while the broker was down, or a crash).

        The first pass re-sends everything left pending before this instance
        started, at once; later passes what nobody touched for a sweep interval.
        """
        interval = self.settings.sweep_interval_s
        since = self._started
        while True:
            try:
                async with self.db.transaction(readonly=True) as conn:
                    stale = await outbox.pending(conn, untouched_since=since, limit=_SWEEP_BATCH)
                for job in stale:
                    if not self._first_sweep.is_set():
                        self._mine.add(job.key)  # left over: drain() waits for it too
                    self.queue().send(job.key)
            except Exception:  # a sweep must never die; the next one retries
                log.exception("sweeping pending jobs failed")
            self._first_sweep.set()
            await asyncio.sleep(interval)
            since = utcnow() - timedelta(seconds=interval)

    async def drain(self, timeout: float) -> None:
        """Wait until the jobs this instance queued are done (or failed for good).

        Embedded, that includes the jobs a crash left pending before this instance
        started: the in-process worker picks them up first.
        """
        deadline = time.monotonic() + timeout
        if not self.redis_url:
            self.queue()  # starts the worker and the sweep
            try:
                await asyncio.wait_for(self._first_sweep.wait(), timeout)
            except TimeoutError as exc:
                raise DrainTimeoutError(
                    f"pending jobs could not be read within {timeout}s") from exc
        last_send = 0.0
        while self._mine:
            async with self.db.transaction(readonly=True) as conn:
                self._mine &= await outbox.unfinished(conn, sorted(self._mine))
            if not self._mine:
                return
            if time.monotonic() - last_send > 0.5 and self._unsent:
                last_send = time.monotonic()
                self.enqueue(sorted(self._unsent))
            if time.monotonic() > deadline:
                raise DrainTimeoutError(
                    f"{len(self._mine)} background jobs still pending after {timeout}s "
                    f"(is a worker running{' on ' + self.redis_url if self.redis_url else ''}?)")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._queue is not None:
            queue, self._queue = self._queue, None
            await asyncio.to_thread(queue.close)  # joins worker threads that use this loop
