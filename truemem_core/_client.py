"""``TrueMem``: the public facade, every method sync and async (``a``-prefixed).

The calls every application makes sit on ``TrueMem``; topics are namespaces on the same
core and loop: ``memory.graph``, ``memory.sessions``, ``memory.syntheses``,
``memory.items`` and ``memory.admin`` (``_graph_client.py`` …).

Each operation is written once, as an async one-line delegation to a service of the
core (``_core.py``) running on TrueMem's private loop; its sync twin is derived from
it (``sync_twin``, ``_bridge.py``), so no signature is written twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, Unpack

from truemem_core._admin_client import AdminNamespace
from truemem_core._bridge import LoopThread, sync_twin
from truemem_core._core import Core
from truemem_core._graph_client import GraphNamespace
from truemem_core._items_client import ItemsNamespace
from truemem_core._sessions_client import SessionsNamespace, SynthesesNamespace
from truemem_core.embeddings import Embedder, TokenCounter
from truemem_core.language import LLM
from truemem_core.records import (
    Context,
    Feedback,
    Kind,
    Memory,
    MemoryEvent,
    Recorded,
    ScoredMemory,
    Source,
)
from truemem_core.search.filters import Mode as SearchMode
from truemem_core.search.filters import SearchFilters
from truemem_core.settings import Settings


class TrueMem:
    """Long-term memory for LLM applications.

    ``database_url``: a SQLite path or URL, or a PostgreSQL URL (default:
    ``$TRUEMEM_DATABASE_URL``, else ``~/.truemem/truemem.db``). ``llm``: any object
    with ``async acomplete(messages) -> str`` for extraction and summaries (the
    built-in rules and extractive summariser otherwise). ``redis_url`` (default
    ``$TRUEMEM_REDIS_URL``): background jobs go to Redis for ``truemem worker``
    processes; without it they run in this process. ``preload=False``: the model and
    token tables load when first needed, not in the first call (one-shot scripts).

    Topics are namespaces, each method with its ``a``-prefixed twin: ``graph``,
    ``sessions``, ``syntheses``, ``items`` and ``admin`` (an operator's calls). After
    ``close()`` every call raises ``ClosedError``; open a new ``TrueMem``.
    """

    def __init__(
        self,
        database_url: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        token_counter: TokenCounter | None = None,
        llm: LLM | None = None,
        redis_url: str | None = None,
        preload: bool = True,
    ) -> None:
        self._loop = LoopThread()
        self._core = Core(self._loop, database_url, embedder=embedder, settings=settings,
                          token_counter=token_counter, llm=llm, redis_url=redis_url,
                          preload=preload)
        self.graph = GraphNamespace(self._loop, self._core)
        self.sessions = SessionsNamespace(self._loop, self._core)
        self.syntheses = SynthesesNamespace(self._loop, self._core)
        self.items = ItemsNamespace(self._loop, self._core)
        self.admin = AdminNamespace(self._loop, self._core)

    @property
    def settings(self) -> Settings:
        return self._core.settings

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Finish background work of this process, close the database; idempotent."""
        if not self._loop.closed:
            self._loop.run(self._core.close())
            self._loop.stop()

    async def aclose(self) -> None:
        if not self._loop.closed:
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

    # -- the two calls ------------------------------------------------------------

    async def aget_context(self, user_id: str, session_id: str, message: str) -> Context:
        return await self._loop.arun(
            self._core.conversation.get_context(user_id, session_id, message))
    get_context = sync_twin(aget_context)

    async def arecord(
        self, user_id: str, session_id: str, user_message: str, assistant_message: str
    ) -> Recorded:
        return await self._loop.arun(
            self._core.conversation.record(user_id, session_id, user_message, assistant_message))
    record = sync_twin(arecord)

    async def arecord_messages(
        self, user_id: str, session_id: str,
        messages: Sequence[tuple[str, str] | tuple[str, str, datetime]],
    ) -> list[int | None]:
        """Record ``(role, content)`` messages (roles: user, assistant, system) in order;
        ``(role, content, said_at)``, ``said_at`` timezone-aware, dates one said earlier.
        Returns their ids; a message with no visible character is skipped (None)."""
        return await self._loop.arun(
            self._core.conversation.record_messages(user_id, session_id, messages))
    record_messages = sync_twin(arecord_messages)

    async def adrain(self, timeout: float = 30.0) -> None:
        """Block until the background work this instance queued is done."""
        await self._loop.arun(self._core.drain(timeout))
    drain = sync_twin(adrain)

    # -- long-term memory --------------------------------------------------------

    async def aadd_memory(
        self,
        user_id: str,
        text: str,
        *,
        importance: int | None = None,
        kind: Kind | None = None,
        source: Source = "manual",
    ) -> Memory:
        return await self._loop.arun(self._core.memories.add(
            user_id, text, importance=importance, kind=kind, source=source))
    add_memory = sync_twin(aadd_memory)

    async def aadd_memories(
        self,
        user_id: str,
        texts: Iterable[str | Mapping[str, Any]],
        *,
        importance: int | None = None,
        kind: Kind | None = None,
        source: Source = "manual",
        batch_size: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Memory]:
        """``add_memory`` of each text in order, embedded and written in batches.

        An item is a text or a mapping ``{"text": ..., "importance": ..., "kind": ...}``
        whose keys override ``importance`` and ``kind`` for that item. Returns one
        ``Memory`` per item, as ``add_memory`` would have returned it (a restatement
        returns the memory it folded into). Every item is checked first: one bad
        item raises ``InvalidInputError`` and nothing is written. ``progress(done,
        total)`` is called after each batch.
        """
        return await self._loop.arun(self._core.memories.add_many(
            user_id, texts, importance=importance, kind=kind, source=source,
            batch_size=batch_size, progress=progress))
    add_memories = sync_twin(aadd_memories)

    async def alist_memories(
        self, user_id: str, *, include_archived: bool = False, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Memory]:
        return await self._loop.arun(self._core.memories.list_memories(
            user_id, include_archived=include_archived, as_of=as_of, valid_at=valid_at))
    list_memories = sync_twin(alist_memories)

    async def aget_memory(self, user_id: str, memory_id: str) -> Memory:
        return await self._loop.arun(self._core.memories.get(user_id, memory_id))
    get_memory = sync_twin(aget_memory)

    async def aupdate_memory(
        self, user_id: str, memory_id: str, *, text: str | None = None,
        importance: int | None = None,
    ) -> Memory:
        return await self._loop.arun(
            self._core.memories.update(user_id, memory_id, text=text, importance=importance))
    update_memory = sync_twin(aupdate_memory)

    async def adelete_memory(self, user_id: str, memory_id: str) -> None:
        await self._loop.arun(self._core.memories.delete(user_id, memory_id))
    delete_memory = sync_twin(adelete_memory)

    async def ahistory(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        return await self._loop.arun(self._core.memories.history(user_id, memory_id))
    history = sync_twin(ahistory)

    async def asearch(
        self,
        user_id: str,
        query: str,
        *,
        k: int | None = None,
        mode: SearchMode = "hybrid",
        **filters: Unpack[SearchFilters],
    ) -> list[ScoredMemory]:
        """The user's top ``k`` memories for ``query``, each explaining its rank.

        ``mode``: ``"hybrid"`` (RRF of the three channels), ``"vector"``,
        ``"keyword"`` or ``"trigram"``. Filters (``SearchFilters``): ``kind``,
        ``min_importance``, ``state`` (default active and ephemeral;
        ``include_archived`` adds archived), ``created_after`` (inclusive) /
        ``created_before`` (exclusive), ``as_of`` / ``valid_at`` (time travel,
        docs/graph.md)."""
        return await self._loop.arun(
            self._core.memories.search(user_id, query, k=k, mode=mode, filters=filters))
    search = sync_twin(asearch)

    async def afeedback(self, user_id: str, memory_id: str, verdict: Feedback) -> Memory:
        """Mark a memory "helpful", "irrelevant" or "wrong"; it moves its dynamic score."""
        return await self._loop.arun(self._core.memories.feedback(user_id, memory_id, verdict))
    feedback = sync_twin(afeedback)

    async def aerase_user(self, user_id: str) -> int:
        return await self._loop.arun(self._core.users.erase_user(user_id))
    erase_user = sync_twin(aerase_user)

    async def aexport_user(self, user_id: str) -> dict[str, Any]:
        return await self._loop.arun(self._core.users.export_user(user_id))
    export_user = sync_twin(aexport_user)

    async def aimport_user(self, user_id: str, data: Mapping[str, Any]) -> list[Memory]:
        return await self._loop.arun(self._core.users.import_user(user_id, data))
    import_user = sync_twin(aimport_user)
