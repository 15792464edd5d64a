"""Running one job by its key: the one table of kinds, retries counted in the row."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from truemem_core.jobs.handlers import Handlers
from truemem_core.settings import Settings
from truemem_core.storage import outbox
from truemem_core.storage.database import Database
from truemem_core.storage.outbox import JobKind

log = logging.getLogger("truemem.jobs")


class JobRunner:
    def __init__(self, db: Database, handlers: Handlers, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.handlers: dict[JobKind, Callable[[Any], Awaitable[None]]] = {
            "extract": handlers.extract,
            "embed": handlers.embed,
            "summarize": handlers.summarize,
            "maintain": handlers.maintain,
            "synthesize": handlers.synthesize,
        }

    async def run(self, key: str) -> None:
        """Run one pending job; skip it if it is done. Failures are recorded and re-raised
        (so the broker retries) until the last retry, which marks the job failed."""
        async with self.db.autocommit() as conn:  # one read: no BEGIN and COMMIT
            job = await outbox.get(conn, key)
        if job is None or job.status != "pending":
            return
        try:
            handler = self.handlers.get(job.kind)
            if handler is None:
                raise LookupError(f"unknown job kind {job.kind!r}")
            await handler(job)
        except Exception as exc:
            attempts = job.attempts + 1
            final = attempts > self.settings.job_max_retries
            async with self.db.transaction() as conn:
                await outbox.fail(conn, key, attempts=attempts, final=final,
                                  error=f"{type(exc).__name__}: {exc}")
            if final:
                log.error("job %s failed for good after %d attempts", key, attempts,
                          exc_info=exc)
                return
            raise
