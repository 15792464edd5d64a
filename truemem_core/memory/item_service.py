"""``ItemService``: store items (JSON documents by namespace and key) behind the facade.

Each item is indexed by one memory of its user whose text is what the caller chose
to embed: ``put`` writes the item and its memory in one transaction (a new key adds
a memory, a changed text updates it and its history says so, no text deletes it);
``delete`` removes both; a search with a query is TrueMem's hybrid search over the
memories that index the items under a namespace prefix. Items' memories are ordinary
memories: ``get_context`` and ``search`` find them, and deleting one deletes its item.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_count, check_k, check_text
from truemem_core.errors import InvalidInputError
from truemem_core.memory import edit, items, reads, rows, write
from truemem_core.memory.items import StoreItem
from truemem_core.memory.maintenance import prune_excess
from truemem_core.memory.service import MemoryService
from truemem_core.search import hybrid
from truemem_core.search.channels import Corpus, memories_of
from truemem_core.search.filters import make_filters
from truemem_core.storage.schema import memories, utcnow


class ItemService:
    def __init__(self, memories: MemoryService) -> None:
        self.memories = memories
        self.db = memories.db
        self.deps = memories.deps

    async def put(
        self, user_id: Any, namespace: Any, key: Any, value: Any, *, text: Any = None,
        importance: int | None = None,
    ) -> StoreItem:
        """Store ``value`` at ``namespace``/``key``, indexed by a memory of ``text``
        (None: not indexed, and a memory that indexed it before is deleted)."""
        user = self.memories.check_user(user_id)
        space, name = items.check_namespace(namespace), items.check_key(key)
        document = items.check_value(value)
        fact = None if text is None else self.memories.fact(
            user, text, importance=importance, kind=None, source="manual")
        if fact is not None:
            fact = dataclasses.replace(fact, vector=(await self.memories.embed([fact.text]))[0])
        async with self.db.writing(user) as conn:
            old = await items.fetch(conn, user, space, name)
            memory_id = await self._index(conn, user, old, fact, space, name)
            await items.write(conn, user, space, name, document, memory_id, old)
            await prune_excess(conn, self.deps, user)
            row = await items.fetch(conn, user, space, name)
        assert row is not None
        return items.to_item(row)

    async def _index(
        self, conn: AsyncConnection, user: str, old: Any, fact: write.Candidate | None,
        space: Sequence[str], key: str,
    ) -> str | None:
        """The memory that indexes the item after this put (added, updated or gone)."""
        current = None if old is None or old.memory_id is None else (await conn.execute(
            select(memories.c.id, memories.c.text).where(
                memories.c.user_id == user, memories.c.id == old.memory_id))).first()
        shared = current is not None and await items.others_indexed_by(
            conn, user, current.id, space, key) > 0
        if fact is None:
            if current is not None and not shared:
                await items.unlink(conn, user, space, key)  # the item outlives its memory
                await edit.forget(conn, user, [current.id], reason="store item not indexed")
            return None
        if current is not None and not shared:
            if current.text != fact.text:
                await edit.update(conn, user, current.id, text=fact.text, importance=None,
                                  vector=fact.vector)
            return str(current.id)
        memory_id = str(uuid.uuid4())
        await conn.execute(memories.insert().values(
            **write.new_row(fact, memory_id, self.deps.model_name, utcnow())))
        await rows.log(conn, user, [write.added_event(fact, memory_id)])
        return memory_id

    async def get(self, user_id: Any, namespace: Any, key: Any) -> StoreItem | None:
        user = self.memories.check_user(user_id)
        space, name = items.check_namespace(namespace), items.check_key(key)
        async with self.db.transaction(readonly=True) as conn:
            row = await items.fetch(conn, user, space, name)
        return None if row is None else items.to_item(row)

    async def delete(self, user_id: Any, namespace: Any, key: Any) -> None:
        """Delete the item and its memory (with its text everywhere); absent: nothing."""
        user = self.memories.check_user(user_id)
        space, name = items.check_namespace(namespace), items.check_key(key)
        async with self.db.writing(user) as conn:
            old = await items.fetch(conn, user, space, name)
            if old is None:
                return
            await self._index(conn, user, old, None, space, name)
            await items.remove(conn, user, space, name)

    async def search(
        self, namespace_prefix: Any, *, user_id: Any = None, query: Any = None,
        filter: Any = None, limit: Any = 10, offset: Any = 0,
    ) -> list[StoreItem]:
        """Items under a prefix: with ``query``, the user's items by hybrid search (best
        first, scored); without, every item under it (of every user when ``user_id`` is
        None), most recently updated first. ``filter`` is on value fields."""
        prefix = items.check_namespace(namespace_prefix, "namespace_prefix", empty=True)
        user = None if user_id is None else self.memories.check_user(user_id)
        conditions = items.check_filter(filter)
        size, skip = check_count(limit, "limit", 0), check_count(offset, "offset", 0)
        if query is None:
            return await self._list(user, prefix, conditions, size, skip)
        if user is None:
            raise InvalidInputError(
                "a search with a query needs the namespace prefix down to the user's label")
        text = check_text(query, "query", self.memories.settings.max_message_chars,
                          setting="max_message_chars")
        if size == 0:
            return []
        return await self._ranked(user, prefix, text, conditions, size, skip)

    async def _list(
        self, user: str | None, prefix: tuple[str, ...], conditions: Mapping[str, Any],
        size: int, skip: int,
    ) -> list[StoreItem]:
        async with self.db.transaction(readonly=True) as conn:
            if not conditions:
                found = await items.listed(conn, user, prefix, limit=size, offset=skip)
                return [items.to_item(row) for row in found]
            found = await items.listed(conn, user, prefix, limit=None, offset=0)
        kept = [row for row in found if items.matches(row.value, conditions)]
        return [items.to_item(row) for row in kept[skip:skip + size]]

    async def _ranked(
        self, user: str, prefix: tuple[str, ...], text: str, conditions: Mapping[str, Any],
        size: int, skip: int,
    ) -> list[StoreItem]:
        """Hybrid search over the memories of the items under ``prefix`` (of those that
        pass the filter), every lifecycle state included: a stored item stays findable."""
        vector = await self.memories.embed_query(text)
        base = memories_of(user, make_filters(include_archived=True))
        async with self.db.autocommit() as conn:
            if conditions:
                found = await items.listed(conn, user, prefix, limit=None, offset=0)
                wanted: Any = [row.memory_id for row in found if row.memory_id is not None
                               and items.matches(row.value, conditions)]
            else:
                wanted = items.indexed_under(user, prefix)
            corpus = Corpus(base.table, user, (*base.where, memories.c.id.in_(wanted)),
                            base.params)
            hits = await hybrid.run(conn, self.deps.channels, corpus, text, vector,
                                    k=check_k(skip + size), mode="hybrid",
                                    settings=self.memories.settings,
                                    columns=rows.MEMORY_COLUMNS)
            scored = reads.scored(hits)
            rank = {hit.memory.id: n for n, hit in enumerate(scored)}  # TrueMem's order
            found = await items.of_memories(conn, user, prefix, list(rank))
        ranked = sorted((row for row in found if not conditions
                         or items.matches(row.value, conditions)),
                        key=lambda row: rank[row.memory_id])
        return [items.to_item(row, scored[rank[row.memory_id]].score)
                for row in ranked[skip:skip + size]]

    async def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace that holds an item (of any user), sorted."""
        async with self.db.transaction(readonly=True) as conn:
            return await items.namespaces(conn)
