"""``TrueMem``: the public facade, every method sync and async (``a``-prefixed).

Each pair is two one-line delegations to the async core running on TrueMem's
private loop (see ``bridge.py``); no body is written twice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from .bridge import LoopThread
from .core import Core
from .embeddings import Embedder
from .models import Kind, Memory, MemoryEvent, ScoredMemory, Source
from .settings import Settings
from .tokens import TokenCounter


class TrueMem:
    """Long-term memory for LLM applications.

    >>> with TrueMem("/tmp/demo.db") as memory:                       # doctest: +SKIP
    ...     memory.add_memory("ana", "Prefers bullet points", importance=5)
    """

    def __init__(
        self,
        database_url: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._core = Core(
            database_url, embedder=embedder, settings=settings, token_counter=token_counter
        )
        self._loop = LoopThread()

    @property
    def settings(self) -> Settings:
        return self._core.settings

    @property
    def database_url(self) -> str:
        return self._core.url

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run(self._core.close())
            self._loop.stop()

    async def aclose(self) -> None:
        await self._loop.arun(self._core.close())
        self._loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: tuple[type[BaseException], BaseException, TracebackType]) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- long-term memory --------------------------------------------------------

    def add_memory(
        self,
        user_id: str,
        text: str,
        *,
        importance: int | None = None,
        kind: Kind | None = None,
        source: Source = "manual",
    ) -> Memory:
        return self._loop.run(self._core.add_memory(
            user_id, text, importance=importance, kind=kind, source=source))

    async def aadd_memory(
        self,
        user_id: str,
        text: str,
        *,
        importance: int | None = None,
        kind: Kind | None = None,
        source: Source = "manual",
    ) -> Memory:
        return await self._loop.arun(self._core.add_memory(
            user_id, text, importance=importance, kind=kind, source=source))

    def list_memories(self, user_id: str, *, include_archived: bool = False) -> list[Memory]:
        return self._loop.run(self._core.list_memories(user_id, include_archived=include_archived))

    async def alist_memories(
        self, user_id: str, *, include_archived: bool = False
    ) -> list[Memory]:
        return await self._loop.arun(
            self._core.list_memories(user_id, include_archived=include_archived))

    def get_memory(self, user_id: str, memory_id: str) -> Memory:
        return self._loop.run(self._core.get_memory(user_id, memory_id))

    async def aget_memory(self, user_id: str, memory_id: str) -> Memory:
        return await self._loop.arun(self._core.get_memory(user_id, memory_id))

    def update_memory(
        self, user_id: str, memory_id: str, *, text: str | None = None,
        importance: int | None = None,
    ) -> Memory:
        return self._loop.run(
            self._core.update_memory(user_id, memory_id, text=text, importance=importance))

    async def aupdate_memory(
        self, user_id: str, memory_id: str, *, text: str | None = None,
        importance: int | None = None,
    ) -> Memory:
        return await self._loop.arun(
            self._core.update_memory(user_id, memory_id, text=text, importance=importance))

    def delete_memory(self, user_id: str, memory_id: str) -> None:
        self._loop.run(self._core.delete_memory(user_id, memory_id))

    async def adelete_memory(self, user_id: str, memory_id: str) -> None:
        await self._loop.arun(self._core.delete_memory(user_id, memory_id))

    def history(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        return self._loop.run(self._core.history(user_id, memory_id))

    async def ahistory(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        return await self._loop.arun(self._core.history(user_id, memory_id))

    def search(self, user_id: str, query: str, *, k: int | None = None) -> list[ScoredMemory]:
        return self._loop.run(self._core.search(user_id, query, k=k))

    async def asearch(
        self, user_id: str, query: str, *, k: int | None = None
    ) -> list[ScoredMemory]:
        return await self._loop.arun(self._core.search(user_id, query, k=k))

    def prune(self, user_id: str) -> list[str]:
        return self._loop.run(self._core.prune(user_id))

    async def aprune(self, user_id: str) -> list[str]:
        return await self._loop.arun(self._core.prune(user_id))

    def erase_user(self, user_id: str) -> int:
        return self._loop.run(self._core.erase_user(user_id))

    async def aerase_user(self, user_id: str) -> int:
        return await self._loop.arun(self._core.erase_user(user_id))

    def export_user(self, user_id: str) -> dict[str, Any]:
        return self._loop.run(self._core.export_user(user_id))

    async def aexport_user(self, user_id: str) -> dict[str, Any]:
        return await self._loop.arun(self._core.export_user(user_id))

    def import_user(self, user_id: str, data: Mapping[str, Any]) -> list[Memory]:
        return self._loop.run(self._core.import_user(user_id, data))

    async def aimport_user(self, user_id: str, data: Mapping[str, Any]) -> list[Memory]:
        return await self._loop.arun(self._core.import_user(user_id, data))
