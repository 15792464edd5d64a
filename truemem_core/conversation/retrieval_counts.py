"""Retrieval counts: how often each memory was served, which feeds adaptive importance.

They are written off the request path by one flusher for all users: counts wait up to
``COUNTS_EVERY_S``, then every user's go in one transaction, so a busy instance writes a
few times a second, not once per ``get_context``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter

from truemem_core.memory.service import MemoryService

log = logging.getLogger("truemem.conversation")

COUNTS_EVERY_S = 0.2  # retrieval counts are written at most this often, all users at once


class RetrievalCounts:
    def __init__(self, memories: MemoryService) -> None:
        self.memories = memories
        self._unwritten: dict[str, Counter[str]] = {}  # counts not yet written
        self._flusher: asyncio.Future[None] | None = None  # writes them while there are any
        self._hurry = asyncio.Event()  # set by settle: write without the pause

    def add(self, user: str, ids: list[str]) -> None:
        """Count one more retrieval of each of the user's memories ``ids``."""
        if ids:
            self._add({user: Counter(ids)})

    def _add(self, counts: dict[str, Counter[str]]) -> None:
        for user, served in counts.items():
            self._unwritten.setdefault(user, Counter()).update(served)
        if self._unwritten and self._flusher is None:
            self._flusher = asyncio.ensure_future(self._write_counts())
            self._flusher.add_done_callback(self._settled)

    async def _write_counts(self) -> None:
        try:
            while self._unwritten:
                if not self._hurry.is_set():
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(COUNTS_EVERY_S):
                            await self._hurry.wait()
                counts, self._unwritten = self._unwritten, {}
                try:
                    await self.memories.touch(counts)
                except BaseException:
                    self._add(counts)  # kept for the next write, beside what came meanwhile
                    raise
        finally:  # after a failure, the next counts (or settle) start the next write
            self._flusher = None
            self._hurry.clear()

    def _settled(self, task: asyncio.Future[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not count a retrieval: %s", task.exception())

    async def settle(self) -> None:
        """Write the pending retrieval counts now, without the pause; returns once they
        are written (or their write failed: they then wait for the next write)."""
        self._add({})  # starts a write of what a failed one left
        while (flusher := self._flusher) is not None:
            self._hurry.set()
            await asyncio.wait({flusher})
