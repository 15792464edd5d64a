"""Reading a user's memories: one, all, a history, search hits as records, nearest facts.

Each function runs in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.errors import NotFoundError
from truemem_core.memory import rows
from truemem_core.memory.deps import MemoryDeps
from truemem_core.memory.lifecycle import search_penalty
from truemem_core.memory.write import current_facts
from truemem_core.records import Memory, MemoryEvent, ScoredMemory
from truemem_core.search.channels import CLOSED, memories_of, one_of, time_travel
from truemem_core.search.fusion import Fused
from truemem_core.storage.direct import fetch_all
from truemem_core.storage.schema import memories, memory_events

# Statements of the request path, built once (see ``search.channels``).
_BY_IDS = select(*rows.MEMORY_COLUMNS).where(
    memories.c.user_id == bindparam("user"), one_of(memories.c.id, "ids"))
_CRITICAL = (select(*rows.MEMORY_COLUMNS)
             .where(memories.c.user_id == bindparam("user"), memories.c.importance >= 5,
                    memories.c.state != "archived", memories.c.valid_to.is_(None))
             .order_by(memories.c.updated_at.desc(), memories.c.id).limit(bindparam("limit")))


async def get(conn: AsyncConnection, user: str, memory_id: Any) -> Memory:
    return rows.to_memory(await rows.fetch(conn, user, memory_id))


async def list_all(
    conn: AsyncConnection, user: str, *, include_archived: bool,
    as_of: datetime | None = None, valid_at: datetime | None = None,
) -> list[Memory]:
    """The user's memories, most important first, oldest first within a rank (``as_of``,
    ``valid_at``: as ``search.channels.time_travel`` says; a fact closed since, archived
    today, is among them)."""
    stmt = select(*rows.MEMORY_COLUMNS).where(memories.c.user_id == user,
                                              *time_travel(as_of, valid_at))
    if not include_archived:  # travelling in time, the facts closed since too
        live = memories.c.state != "archived"
        stmt = stmt.where(live if as_of is None and valid_at is None else or_(live, CLOSED))
    stmt = stmt.order_by(memories.c.importance.desc(), memories.c.created_at)
    return [rows.to_memory(row) for row in await conn.execute(stmt)]


async def by_ids(conn: AsyncConnection, user: str, ids: Sequence[str]) -> list[Memory]:
    """The user's memories with these ids, in that order (unknown ids are left out)."""
    found = {row.id: rows.to_memory(row) for row in await conn.execute(
        _BY_IDS, {"user": user, "ids": list(ids)})}
    return [found[i] for i in ids if i in found]


async def history(conn: AsyncConnection, user: str, memory_id: Any) -> list[MemoryEvent]:
    """Every change to the memory, oldest first (also after it was deleted)."""
    stmt = (
        select(memory_events)
        .where(memory_events.c.user_id == user,
               memory_events.c.memory_id == rows.check_memory_id(memory_id))
        .order_by(memory_events.c.id)
    )
    events = [rows.to_event(row) for row in await conn.execute(stmt)]
    if not events:
        raise NotFoundError(f"no memory {memory_id!r} for user {user!r}")
    return events


def scored(hits: Sequence[Fused]) -> list[ScoredMemory]:
    """Search hits read with their rows (``rows.MEMORY_COLUMNS``) as records, best
    first; ephemeral and archived ones are down-ranked."""
    result = [ScoredMemory(rows.to_memory(hit.row), hit.score * search_penalty(hit.row.state),
                           hit.scores, hit.ranks) for hit in hits]
    return sorted(result, key=lambda hit: -hit.score)


async def critical(conn: AsyncConnection, user: str, limit: int) -> list[Memory]:
    """The user's current importance-5 memories, most recently updated first."""
    if limit < 1:
        return []
    found = await fetch_all(conn, _CRITICAL, {"user": user, "limit": limit})
    return [rows.to_memory(row) for row in found]


async def nearest_current(
    conn: AsyncConnection, deps: MemoryDeps, user: str, vector: Vector, k: int
) -> list[tuple[str, str]]:
    """The user's ``k`` current memories nearest ``vector``: (id, text), nearest first."""
    nearest = await deps.channels.nearest(conn, memories_of(user), vector, k)
    current = await current_facts(conn, user, [i for i, _ in nearest])
    return [(i, current[i].text) for i, _ in nearest if i in current]
