"""Hard deletion of graph rows: what a deleted memory gave the graph, or a whole user.

Retractions (``retract``) keep rows for ``as_of``; erasure leaves no copy: the
observations a memory was the source of, the relations it is evidence for
(whatever else supports them: its words may be their evidence text), and the
entities it created that no row uses any more.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import and_, exists, not_, or_
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.tables import chunks, citing, evidence_ids
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations

e, o, r = graph_entities, graph_observations, graph_relations


async def forget_memories(conn: AsyncConnection, user: str, memory_ids: Collection[str]) -> None:
    """Remove every graph row derived from these memories of ``user``."""
    ids = sorted(memory_ids)
    if not ids:
        return
    await conn.execute(o.delete().where(o.c.user_id == user, o.c.source_memory_id.in_(ids)))
    doomed = sorted(row.id for row in await citing(conn, user, ids))
    for part in chunks(doomed):
        await conn.execute(r.delete().where(r.c.user_id == user, r.c.id.in_(part)))
    used = or_(exists().where(o.c.user_id == user, o.c.entity_id == e.c.id),
               exists().where(r.c.user_id == user,
                              or_(r.c.source_id == e.c.id, r.c.target_id == e.c.id)))
    await conn.execute(e.delete().where(and_(
        e.c.user_id == user, e.c.source_memory_id.in_(ids), not_(used))))


async def erase_user(conn: AsyncConnection, user: str) -> None:
    for table in (r, o, e):
        await conn.execute(table.delete().where(table.c.user_id == user))


async def repoint_memories(conn: AsyncConnection, user: str, moves: dict[str, str]) -> None:
    """Memories folded into others (``{absorbed: survivor}``): what the graph derived from an
    absorbed memory now names the survivor, so deleting the survivor erases it too."""
    if not moves:
        return
    old = sorted(moves)
    for table in (o, e):
        for absorbed in old:
            await conn.execute(table.update().where(
                table.c.user_id == user, table.c.source_memory_id == absorbed)
                .values(source_memory_id=moves[absorbed]))
    for row in await citing(conn, user, old):
        moved = list(dict.fromkeys(moves.get(i, i) for i in evidence_ids(row.evidence_memory_ids)))
        await conn.execute(r.update().where(r.c.id == row.id).values(evidence_memory_ids=moved))
