"""The composition root behind ``TrueMem``: builds the database, the services and the jobs.

Nothing here does work of its own. Construction does no I/O and starts no
thread: the database opens on its first transaction (migrating the schema,
checking the embedder, loading the embedding model and the token tables unless
``preload`` is off), the job queue on the first job.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable
from typing import Any

from truemem_core._bridge import LoopThread
from truemem_core._users import Users
from truemem_core.conversation.service import Conversation
from truemem_core.embeddings import Embedder, TiktokenCounter, TokenCounter, default_embedder
from truemem_core.errors import InvalidInputError
from truemem_core.graph.service import GraphService
from truemem_core.jobs.broker import check_redis_url
from truemem_core.jobs.dispatcher import Dispatcher
from truemem_core.jobs.handlers import Handlers
from truemem_core.jobs.runner import JobRunner
from truemem_core.language import LLM, offload
from truemem_core.memory.item_service import ItemService
from truemem_core.memory.peer_import import PeerImport
from truemem_core.memory.service import MemoryService
from truemem_core.settings import Settings
from truemem_core.storage.database import Database, resolve_url


class Core:
    def __init__(
        self,
        loop: LoopThread,
        database_url: Any = None,
        *,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        token_counter: TokenCounter | None = None,
        llm: LLM | None = None,
        redis_url: str | None = None,
        preload: bool = True,
    ) -> None:
        for name, value, kind, wanted in (
                ("settings", settings, Settings, "a Settings (Settings(**values) from a dict)"),
                ("embedder", embedder, Embedder, "an Embedder (embed, dimension, model_name)"),
                ("token_counter", token_counter, TokenCounter, "a TokenCounter (count(text))")):
            if value is not None and not isinstance(value, kind):
                raise InvalidInputError(f"{name} must be {wanted}, got {type(value).__name__}")
        self.settings = settings or Settings.from_env()
        self.url = resolve_url(database_url)
        redis = redis_url if redis_url is not None else os.environ.get("TRUEMEM_REDIS_URL")
        self.redis_url = check_redis_url(redis) if redis else None
        self.embedder: Embedder = embedder or default_embedder(
            self.settings.embedding_threads, int8_queries=self.settings.int8_queries)
        self.tokens: TokenCounter = token_counter or TiktokenCounter(self.settings.token_encoding)
        loads = [model.load for model in (self.embedder, self.tokens) if hasattr(model, "load")]
        self.db = Database(self.url, embedder=self.embedder, loads=loads if preload else [])
        self.memories = MemoryService(self.db, self.embedder, self.settings)
        self.items = ItemService(self.memories)
        self.peers = PeerImport(self.memories)
        self.users = Users(self.memories, self.tokens)
        self.graph = GraphService(self.db, self.settings)
        self.runner = JobRunner(
            self.db, Handlers(self.db, self.memories, self.settings, llm), self.settings)
        self.jobs = Dispatcher(self.db, self.settings, self.redis_url, self.runner.run, loop.run)
        self.conversation = Conversation(
            self.db, self.memories, self.tokens, self.settings, on_queued=self.jobs.enqueue)
        offload.hold()  # the text helper process lives while a store is open

    async def drain(self, timeout: float) -> None:
        """Wait for the request path's background writes, then for this instance's jobs."""
        if (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                or not 0 <= timeout < math.inf):
            raise InvalidInputError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        await self.conversation.counts.settle()
        await self.jobs.drain(timeout)

    async def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed the whole store with this instance's embedder (no embedder check)."""
        db = Database(self.url, embedder=None)
        try:
            count = await MemoryService(db, self.embedder, self.settings).reembed(progress=progress)
        finally:
            await db.close()
        await self.db.open()
        return count

    async def close(self) -> None:
        try:
            await self.jobs.close()
            await self.conversation.counts.settle()
            await self.db.close()
        finally:
            await asyncio.to_thread(offload.release)


class Namespace:
    """A topic of ``TrueMem``'s calls (``memory.graph``, ``memory.items``…): async
    methods on the core, each with its derived sync twin, on ``TrueMem``'s loop."""

    def __init__(self, loop: LoopThread, core: Core) -> None:
        self._loop = loop
        self._core = core
