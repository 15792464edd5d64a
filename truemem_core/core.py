"""The async core behind ``TrueMem``: owns the database, the services and the jobs.

Opening is lazy (the first call migrates the schema and checks the embedder),
so constructing a ``TrueMem`` does no I/O and starts no thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .bridge import LoopThread
from .context import Context
from .conversation import SessionState
from .embeddings import Embedder, default_embedder
from .errors import DrainTimeoutError
from .extraction import LLM
from .jobs import JobQueue
from .memories import MemoryService
from .models import Memory, MemoryEvent, ScoredMemory
from .pipeline import Job, Pipeline, Recorded
from .settings import Settings
from .store import Database, resolve_url
from .tokens import TiktokenCounter, TokenCounter

log = logging.getLogger("truemem")


class Core:
    def __init__(
        self,
        loop: LoopThread,
        database_url: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        token_counter: TokenCounter | None = None,
        llm: LLM | None = None,
        redis_url: str | None = None,
    ) -> None:
        self.loop = loop
        self.settings = settings or Settings.from_env()
        self.url = resolve_url(database_url)
        self.redis_url = redis_url if redis_url is not None else os.environ.get(
            "TRUEMEM_REDIS_URL") or None
        self.embedder: Embedder = embedder or default_embedder(self.settings.embedding_threads)
        self.tokens: TokenCounter = token_counter or TiktokenCounter(self.settings.token_encoding)
        self.llm = llm
        self._db: Database | None = None
        self._memories: MemoryService | None = None
        self._pipeline: Pipeline | None = None
        self._queue: JobQueue | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._opening: asyncio.Lock | None = None
        self._mine: set[str] = set()  # jobs this instance queued, for drain()
        self._unsent: dict[str, str] = {}

    async def ready(self) -> Pipeline:
        if self._pipeline is not None:
            return self._pipeline
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pipeline is None:
                db = Database(self.url)
                try:
                    await db.open(
                        embedding_model=self.embedder.model_name,
                        dimension=self.embedder.dimension,
                    )
                except BaseException:
                    await db.close()
                    raise
                self._db = db
                self._memories = MemoryService(db, self.embedder, self.settings, self.tokens)
                self._pipeline = Pipeline(db, self._memories, self.tokens, self.settings, self.llm)
        return self._pipeline

    async def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed the whole store with this instance's embedder, then open it."""
        db = Database(self.url)
        try:
            await db.open(embedding_model=self.embedder.model_name,
                          dimension=self.embedder.dimension, check=False)
            service = MemoryService(db, self.embedder, self.settings, self.tokens)
            count = await service.reembed(progress=progress)
        finally:
            await db.close()
        await self.ready()
        return count

    async def mem(self) -> MemoryService:
        return (await self.ready()).memories

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("TrueMem is not open yet")
        return self._db

    # -- jobs ---------------------------------------------------------------------

    def _perform(self, key: str) -> None:
        """Dramatiq actor body (a worker thread): run the job on TrueMem's loop."""
        self.loop.run(self.run_job(key))

    async def run_job(self, key: str) -> None:
        await (await self.ready()).run_job(key)

    def queue(self) -> JobQueue:
        if self._queue is None:
            self._queue = JobQueue(self.redis_url, self._perform, self.settings)
            if not self.redis_url:  # embedded: the actors run in this process
                self._start_worker()
        return self._queue

    def _start_worker(self, threads: int = 1) -> None:
        assert self._queue is not None
        self._queue.start_worker(threads)
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())

    async def serve(self, threads: int) -> None:
        """Run the actors on this process (``truemem worker``) until cancelled."""
        await self.ready()
        self.queue()
        self._start_worker(threads)
        await asyncio.Event().wait()

    async def _sweep_forever(self) -> None:
        """Re-send jobs that stayed pending (lost while the broker was down, or a crash)."""
        interval = self.settings.sweep_interval_s
        while True:
            try:
                for job in await (await self.ready()).pending(older_than=interval):
                    self.queue().send(job.kind, job.key)
            except Exception:  # a sweep must never die; the next one retries
                log.exception("sweeping pending jobs failed")
            await asyncio.sleep(interval)

    def _enqueue(self, queued: list[Job]) -> None:
        for job in queued:
            self._mine.add(job.key)
            if self.queue().send(job.kind, job.key):
                self._unsent.pop(job.key, None)
            else:
                self._unsent[job.key] = job.kind

    async def drain(self, timeout: float) -> None:
        """Wait until the jobs this instance queued are done (or failed for good)."""
        pipeline = await self.ready()
        await pipeline.settle()
        deadline = time.monotonic() + timeout
        last_send = 0.0
        while self._mine:
            self._mine &= await pipeline.unfinished(sorted(self._mine))
            if not self._mine:
                return
            if time.monotonic() - last_send > 0.5 and self._unsent:
                last_send = time.monotonic()
                self._enqueue([Job(k, kind) for k, kind in list(self._unsent.items())])
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
        if self._pipeline is not None:
            await self._pipeline.settle()
        if self._db is not None:
            await self._db.close()
        self._db = self._memories = self._pipeline = None

    # -- the two calls ------------------------------------------------------------

    async def get_context(
        self, user_id: str, session_id: str, message: str, *, concurrent: bool = True
    ) -> Context:
        pipeline = await self.ready()
        return await pipeline.get_context(user_id, session_id, message, concurrent=concurrent)

    async def record(
        self, user_id: str, session_id: str, user_message: str, assistant_message: str
    ) -> Recorded:
        recorded, queued = await (await self.ready()).record(
            user_id, session_id, user_message, assistant_message)
        self._enqueue(queued)
        return recorded

    async def record_messages(
        self, user_id: str, session_id: str, turns: Sequence[tuple[str, str]]
    ) -> list[int]:
        ids, queued = await (await self.ready()).record_messages(user_id, session_id, turns)
        self._enqueue(queued)
        return ids

    async def get_session(self, user_id: str, session_id: str) -> SessionState:
        return await (await self.ready()).session(user_id, session_id)

    async def clear_session(self, user_id: str, session_id: str) -> None:
        await (await self.ready()).clear_session(user_id, session_id)

    # -- long-term memory -------------------------------------------------------

    async def add_memory(self, user_id: str, text: str, **options: Any) -> Memory:
        return await (await self.mem()).add(user_id, text, **options)

    async def list_memories(self, user_id: str, *, include_archived: bool) -> list[Memory]:
        return await (await self.mem()).list_memories(user_id, include_archived=include_archived)

    async def get_memory(self, user_id: str, memory_id: str) -> Memory:
        return await (await self.mem()).get(user_id, memory_id)

    async def update_memory(self, user_id: str, memory_id: str, **changes: Any) -> Memory:
        return await (await self.mem()).update(user_id, memory_id, **changes)

    async def delete_memory(self, user_id: str, memory_id: str) -> None:
        await (await self.mem()).delete(user_id, memory_id)

    async def history(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        return await (await self.mem()).history(user_id, memory_id)

    async def search(self, user_id: str, query: str, **options: Any) -> list[ScoredMemory]:
        return await (await self.mem()).search(user_id, query, **options)

    async def feedback(self, user_id: str, memory_id: str, verdict: str) -> Memory:
        return await (await self.mem()).feedback(user_id, memory_id, verdict)

    async def maintain(self, user_id: str) -> dict[str, str]:
        return await (await self.mem()).maintain(user_id)

    async def prune(self, user_id: str) -> list[str]:
        return await (await self.mem()).prune(user_id)

    async def erase_user(self, user_id: str) -> int:
        return await (await self.mem()).erase_user(user_id)

    async def export_user(self, user_id: str) -> dict[str, Any]:
        return await (await self.mem()).export_user(user_id)

    async def import_user(self, user_id: str, data: Mapping[str, Any]) -> list[Memory]:
        return await (await self.mem()).import_user(user_id, data)



