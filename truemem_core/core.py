"""The async core behind ``TrueMem``: owns the database, the embedder and the services.

Opening is lazy (first call migrates the schema and checks the embedder), so
constructing a ``TrueMem`` does no I/O.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from .embeddings import Embedder, default_embedder
from .memories import MemoryService
from .models import Memory, MemoryEvent, ScoredMemory
from .settings import Settings
from .store import Database, resolve_url
from .tokens import TiktokenCounter, TokenCounter


class Core:
    def __init__(
        self,
        database_url: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.url = resolve_url(database_url)
        self.embedder: Embedder = embedder or default_embedder(self.settings.embedding_threads)
        self.tokens: TokenCounter = token_counter or TiktokenCounter(self.settings.token_encoding)
        self._db: Database | None = None
        self._memories: MemoryService | None = None
        self._opening: asyncio.Lock | None = None

    async def ready(self) -> MemoryService:
        if self._memories is not None:
            return self._memories
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._memories is None:
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
                self._memories = MemoryService(db, self.embedder, self.settings)
        return self._memories

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("TrueMem is not open yet")
        return self._db

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
        self._db = self._memories = None

    # -- long-term memory -------------------------------------------------------

    async def add_memory(self, user_id: str, text: str, **options: Any) -> Memory:
        return await (await self.ready()).add(user_id, text, **options)

    async def list_memories(self, user_id: str, *, include_archived: bool) -> list[Memory]:
        return await (await self.ready()).list_memories(user_id, include_archived=include_archived)

    async def get_memory(self, user_id: str, memory_id: str) -> Memory:
        return await (await self.ready()).get(user_id, memory_id)

    async def update_memory(self, user_id: str, memory_id: str, **changes: Any) -> Memory:
        return await (await self.ready()).update(user_id, memory_id, **changes)

    async def delete_memory(self, user_id: str, memory_id: str) -> None:
        await (await self.ready()).delete(user_id, memory_id)

    async def history(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        return await (await self.ready()).history(user_id, memory_id)

    async def search(self, user_id: str, query: str, *, k: int | None) -> list[ScoredMemory]:
        return await (await self.ready()).search(user_id, query, k=k)

    async def prune(self, user_id: str) -> list[str]:
        return await (await self.ready()).prune(user_id)

    async def erase_user(self, user_id: str) -> int:
        return await (await self.ready()).erase_user(user_id)

    async def export_user(self, user_id: str) -> dict[str, Any]:
        return await (await self.ready()).export_user(user_id)

    async def import_user(self, user_id: str, data: Mapping[str, Any]) -> list[Memory]:
        return await (await self.ready()).import_user(user_id, data)
