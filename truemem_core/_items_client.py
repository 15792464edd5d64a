"""``memory.items``: store items (``ItemsNamespace``).

A store item is a JSON document at a namespace (a tuple of labels) and a key, owned
by one user and indexed by one of the user's memories, whose text is what the caller
chose to embed: what ``truemem_integrations.langgraph.TrueMemStore`` is built on.
Every operation is an async one-line delegation to ``ItemService``
(``truemem_core/memory/item_service.py``), its sync twin derived.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from truemem_core._bridge import sync_twin
from truemem_core._core import Namespace
from truemem_core.memory.items import StoreItem
from truemem_core.memory.peer_import import ImportReport, PeerRecord


class ItemsNamespace(Namespace):
    """``memory.items``: JSON documents at a namespace and key, indexed by a memory."""

    async def aput(
        self, user_id: str, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
        text: str | None = None, importance: int | None = None,
    ) -> StoreItem:
        """Store ``value`` at ``namespace``/``key`` of the user, replacing what was there.

        ``text``: what indexes the item, kept as one of the user's memories (a put that
        changes it updates that memory, with history); None: not indexed (a memory that
        indexed the item before is deleted). Labels hold no ``.``."""
        return await self._loop.arun(self._core.items.put(
            user_id, namespace, key, value, text=text, importance=importance))
    put = sync_twin(aput)

    async def aget(
        self, user_id: str, namespace: Sequence[str], key: str
    ) -> StoreItem | None:
        return await self._loop.arun(self._core.items.get(user_id, namespace, key))
    get = sync_twin(aget)

    async def adelete(self, user_id: str, namespace: Sequence[str], key: str) -> None:
        """Delete the item and the memory that indexes it; an absent item is no error."""
        await self._loop.arun(self._core.items.delete(user_id, namespace, key))
    delete = sync_twin(adelete)

    async def asearch(
        self, namespace_prefix: Sequence[str], *, user_id: str | None = None,
        query: str | None = None, filter: Mapping[str, Any] | None = None,
        limit: int = 10, offset: int = 0,
    ) -> list[StoreItem]:
        """Items under ``namespace_prefix``. With ``query`` (``user_id`` then required):
        the user's items ranked by TrueMem's hybrid search over their memories, each
        with its score. Without: every item under the prefix (of one user, or of all),
        most recently updated first. ``filter``: ``{field: value}`` or ``{field:
        {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value}}`` on the value's fields."""
        return await self._loop.arun(self._core.items.search(
            namespace_prefix, user_id=user_id, query=query, filter=filter, limit=limit,
            offset=offset))
    search = sync_twin(asearch)

    async def anamespaces(self) -> list[tuple[str, ...]]:
        """Every namespace that holds an item, of every user, sorted."""
        return await self._loop.arun(self._core.items.namespaces())
    namespaces = sync_twin(anamespaces)

    async def aimport_records(
        self, records: Sequence[PeerRecord], *, dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None, batch_size: int = 256,
    ) -> ImportReport:
        """Memories of another system (``truemem import``): each becomes a memory as a new
        fact does (dedup, admission), keeping its times, and a store item at its origin's
        namespace and key, so that importing the same records again writes nothing.
        ``batch_size`` records commit together (memories and items in one transaction)."""
        return await self._loop.arun(self._core.peers.run(
            records, dry_run=dry_run, progress=progress, batch_size=batch_size))
    import_records = sync_twin(aimport_records)
