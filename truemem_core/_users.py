"""A user as a whole: export everything, import it back, erase every row; the list of
the store's users.

Each is one transaction across long-term memory and conversations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from truemem_core._validation import check_storable, malformed
from truemem_core.conversation import sessions
from truemem_core.conversation.passages import embed_messages
from truemem_core.embeddings import TokenCounter
from truemem_core.errors import InvalidInputError
from truemem_core.graph import portability as graph_portability
from truemem_core.memory import items as store
from truemem_core.memory import portability, reads
from truemem_core.memory.maintenance import prune_excess
from truemem_core.memory.service import MemoryService
from truemem_core.records import Memory, UserInfo
from truemem_core.storage.schema import (
    GRAPH_TABLES,
    admission_rejections,
    jobs,
    memories,
    memory_events,
    messages,
    passages,
    store_items,
    syntheses,
    utcnow,
)
from truemem_core.storage.schema import sessions as sessions_table
from truemem_core.synthesis import store as synthesis_store


class Users:
    def __init__(self, memories: MemoryService, tokens: TokenCounter) -> None:
        self.memories = memories
        self.db = memories.db
        self.tokens = tokens

    async def export_user(self, user_id: Any) -> dict[str, Any]:
        """Every memory (with history), deleted memories' histories, every session, the
        graph, the store items and the syntheses."""
        user = self.memories.check_user(user_id)
        async with self.db.transaction(readonly=True) as conn:
            exported = await portability.export_memories(conn, user)
            chats = await sessions.export_sessions(conn, user)
            graph = await graph_portability.export_graph(conn, user)
            kept = [store.exported(row) for row in await store.of_user(conn, user)]
            summaries = await synthesis_store.export_syntheses(conn, user)
        return {"format": portability.FORMAT, "user_id": user,
                "exported_at": utcnow().isoformat(), **exported, "sessions": chats,
                "graph": graph, "store_items": kept, "syntheses": summaries}

    async def import_user(self, user_id: Any, data: Mapping[str, Any]) -> list[Memory]:
        """Restore an export under ``user_id``: new ids, same texts, ranks, times and history.

        Everything is validated before anything is written; vectors (of memories and
        messages) are computed with this store's embedder. Imported memories are not
        deduplicated, and the soft limit applies as to any other add: the excess is pruned.
        """
        user = self.memories.check_user(user_id)
        items, deleted = portability.parse_export(data, self.memories.settings.max_text_chars)
        try:
            chats = sessions.parse_sessions(data.get("sessions"), self.memories.settings)
        except InvalidInputError as exc:
            raise InvalidInputError(f"export 'sessions': {exc}") from exc
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise malformed("export 'sessions'", exc) from exc
        graph = graph_portability.parse_graph(data.get("graph"))
        kept = store.parse_exported(data.get("store_items"), data.get("user_id"), user)
        try:
            summaries = synthesis_store.parse_syntheses(data.get("syntheses"),
                                                        self.memories.settings)
        except InvalidInputError as exc:
            raise InvalidInputError(f"export 'syntheses': {exc}") from exc
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise malformed("export 'syntheses'", exc) from exc
        vectors = await self.memories.embed([item["text"] for item in items])
        said = [turn["content"] for chat in chats for turn in chat["messages"]]
        # passages are derived data, not exported: cut again from the messages, and
        # embedded with them, so the import is recallable at once
        counts = await asyncio.to_thread(lambda: [self.tokens.count(text) for text in said])
        said_vectors, cuts, passage_vectors = await embed_messages(
            list(zip(said, counts, strict=True)), self.memories.settings, self.memories.embed)
        summary_vectors = await self.memories.embed([item["text"] for item in summaries])
        async with self.db.writing(user) as conn:
            said_ids = await sessions.import_sessions(
                conn, user, chats, said_vectors, self.memories.embedder.model_name,
                counts, cuts, passage_vectors)
            ids = await portability.import_memories(conn, user, items, vectors,
                                                    self.memories.embedder.model_name, deleted,
                                                    said_ids)
            new_ids = {item["exported_id"]: new for item, new in zip(items, ids, strict=True)
                       if item["exported_id"]}
            await store.import_exported(conn, user, kept, new_ids)
            await graph_portability.import_graph(conn, user, graph, new_ids, said_ids)
            await synthesis_store.import_syntheses(
                conn, user, summaries, summary_vectors, self.memories.embedder.model_name,
                said_ids, new_ids)
            await prune_excess(conn, self.memories.deps, user)
            return await reads.by_ids(conn, user, ids)

    async def erase_user(self, user_id: Any) -> int:
        """Remove every row of the user; returns how many memories were removed."""
        user = self.memories.check_user(user_id)
        async with self.db.writing(user) as conn:
            removed = await conn.execute(memories.delete().where(memories.c.user_id == user))
            for table in (memory_events, passages, messages, sessions_table, jobs,
                          admission_rejections, store_items, syntheses, *GRAPH_TABLES):
                await conn.execute(table.delete().where(table.c.user_id == user))
            return int(removed.rowcount or 0)

    async def list_users(self, prefix: Any = "", limit: Any = 500) -> list[UserInfo]:
        """Up to ``limit`` users whose id starts with ``prefix``, by id.

        The core keeps no list of users: one grouped read of each table their ids live in
        (memories, sessions). The prefix is tested with ``substr`` (exact under any
        collation, no ``LIKE`` wildcards to escape), which reads every row's id: a call
        for an operator's page, not for a hot path."""
        if not isinstance(prefix, str):
            raise InvalidInputError(f"prefix must be a string, got {type(prefix).__name__}")
        check_storable(prefix, "prefix")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be an int >= 1, got {limit!r}")
        reads = [select(table.c.user_id, func.count(), func.max(table.c.updated_at))
                 .where(func.substr(table.c.user_id, 1, len(prefix)) == prefix)
                 .group_by(table.c.user_id).order_by(table.c.user_id).limit(limit)
                 for table in (memories, sessions_table)]
        async with self.db.transaction(readonly=True) as conn:
            found = [[(row[0], int(row[1]), row[2]) for row in await conn.execute(read)]
                     for read in reads]
        return merge_users(found[0], found[1])[:limit]


def merge_users(memory_rows: list[tuple[str, int, datetime | None]],
                session_rows: list[tuple[str, int, datetime | None]]) -> list[UserInfo]:
    """One ``UserInfo`` per user id, by id, from the two grouped reads."""
    users = {user: UserInfo(user, count, 0, changed) for user, count, changed in memory_rows}
    for user, count, changed in session_rows:
        seen = users.get(user, UserInfo(user, 0, 0, None))
        last = max((t for t in (seen.last_change, changed) if t is not None), default=None)
        users[user] = UserInfo(user, seen.memories, count, last)
    return [users[user] for user in sorted(users)]
