"""Getting jobs to a worker: enqueue after commit, re-send what stayed pending, drain.

A send that fails (Redis down) leaves the job pending, and a sweep re-sends
pending jobs, so nothing accepted is lost. Running a job twice is harmless
(see ``handlers``). The sweep is the worker's clock: it also merges SQLite's
full-text indexes a little (``text_indexes.merge_some``), which writes outside an
exchange leave split.

Sends happen in a thread of their own (``_Sender``), never on TrueMem's event loop:
with Redis a send is a network round trip, and while Redis is down a failed connect
with retries (tens of milliseconds), or no answer at all from a hung server. On the
loop that would hold up every caller, and ``record``'s own caller too; the job rows
are committed before the send, so nothing waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from datetime import timedelta
from typing import Any

import dramatiq

from truemem_core.errors import DrainTimeoutError, StorageError
from truemem_core.jobs.broker import JobQueue
from truemem_core.settings import Settings
from truemem_core.storage import outbox, text_indexes
from truemem_core.storage.database import Database
from truemem_core.storage.failures import is_outage
from truemem_core.storage.schema import utcnow

log = logging.getLogger("truemem.jobs")

_SWEEP_BATCH = 500
_POLL_KEYS = 64  # jobs ``drain`` asks about per poll
PAUSE_AFTER_FAILURE_S = 1.0  # after a failed send, keys wait for drain and the sweep this long
STOP_TIMEOUT_S = 5.0  # closing waits this long for sends in flight (a hung broker's are left)


class _Sender:
    """One thread that hands job keys to the broker, in the order they are put.

    ``done(keys, failed)`` is called from that thread after each batch. After a failed
    send the keys that follow within ``PAUSE_AFTER_FAILURE_S`` are not tried: they
    count as failed at once, so a broker outage costs one failed connect a second,
    not one per job, and the backlog cannot grow while it lasts.
    """

    def __init__(self, send: Callable[[str], bool],
                 done: Callable[[list[str], list[str]], None]) -> None:
        self._send = send
        self._done = done
        self._todo: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="truemem-send", daemon=True)
        self._thread.start()

    def put(self, keys: list[str]) -> None:
        self._todo.put(keys)

    def _run(self) -> None:
        paused_until = 0.0
        while (keys := self._todo.get()) is not None:
            failed = []
            for key in keys:
                if time.monotonic() < paused_until:
                    failed.append(key)  # not tried: the broker failed a moment ago
                elif not self._try(key):
                    failed.append(key)
                    paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_S
            self._done(keys, failed)

    def _try(self, key: str) -> bool:
        try:
            return self._send(key)
        except Exception:  # never the thread's end: the job stays pending, the sweep retries
            log.exception("could not enqueue %s", key)
            return False

    def stop(self, timeout: float) -> None:
        """Send what was put before, then end; a send still hanging after ``timeout``
        is abandoned (its jobs stay pending for the next sweep)."""
        self._todo.put(None)
        self._thread.join(timeout)


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
        self._sender: _Sender | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._mine: set[str] = set()  # jobs this instance queued or re-sent, for drain()
        self._unsent: set[str] = set()
        self._started = utcnow()
        self._first_sweep = asyncio.Event()

    def _perform(self, key: str) -> None:
        """The actor's body, on a Dramatiq worker thread."""
        try:
            self._run_on_loop(self._run_job(key))
        except StorageError as exc:
            if not is_outage(exc):
                raise
            # the database is down: one line a job, not three chained tracebacks; the
            # broker retries it as it would any failure (the job stays pending)
            log.warning("job %s not run: %s (retried later)", key, exc)
            raise dramatiq.Retry(str(exc)) from None

    def queue(self) -> JobQueue:
        """The broker's queue, and the thread that sends to it (built on first use, on
        the loop)."""
        if self._queue is None:
            self._queue = JobQueue(self.redis_url, self._perform, self.settings)
            loop = asyncio.get_running_loop()

            def done(keys: list[str], failed: list[str]) -> None:  # in the sender's thread
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(self._sent, keys, failed)

            self._sender = _Sender(self._queue.send, done)
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
        """Send committed jobs, from the sender's thread (this returns at once); what
        cannot be sent is re-sent by ``drain`` and the sweep."""
        keys = list(keys)
        self._mine.update(keys)
        self._send(keys)

    def _send(self, keys: list[str]) -> None:
        if keys:
            self.queue()
            assert self._sender is not None
            self._sender.put(keys)

    def _sent(self, keys: list[str], failed: list[str]) -> None:
        """The sender's report, on the loop."""
        self._unsent.difference_update(keys)
        self._unsent.update(failed)

    async def _sweep_forever(self) -> None:
        """Re-send jobs that stayed pending (lost while the broker was down, or a crash).

        The first pass re-sends everything left pending before this instance
        started, at once; later passes what nobody touched for a sweep interval.
        """
        interval = self.settings.sweep_interval_s
        since = self._started
        while True:
            try:
                async with self.db.autocommit() as conn:
                    stale = await outbox.pending(conn, untouched_since=since, limit=_SWEEP_BATCH)
                if not self._first_sweep.is_set():
                    self._mine.update(job.key for job in stale)  # left over: drain() waits too
                self._send([job.key for job in stale])
            except StorageError as exc:
                if not is_outage(exc):
                    log.exception("sweeping pending jobs failed")
                else:  # an outage: one line a sweep, as for jobs, not a traceback
                    log.warning("sweeping pending jobs failed: %s (the next sweep retries)", exc)
            except Exception:  # a sweep must never die; the next one retries
                log.exception("sweeping pending jobs failed")
            self._first_sweep.set()
            try:
                await text_indexes.merge_some(self.db)
            except Exception as exc:  # e.g. a long write held the lock: the next sweep merges
                log.warning("could not merge the full-text indexes: %s", exc)
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
            # a few keys a poll, not the whole backlog: polled every 20 ms on the loop the
            # jobs run on, a thousand keys a poll would slow the very jobs it waits for
            checked = sorted(self._mine)[:_POLL_KEYS]
            async with self.db.autocommit() as conn:
                still = await outbox.unfinished(conn, checked)
            self._mine.difference_update(set(checked) - still)
            if not self._mine:
                return
            if not still:
                continue  # those were done: the next few at once
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
        if self._sender is not None:
            sender, self._sender = self._sender, None
            await asyncio.to_thread(sender.stop, STOP_TIMEOUT_S)
        if self._queue is not None:
            jobs, self._queue = self._queue, None
            await asyncio.to_thread(jobs.close)  # joins worker threads that use this loop
