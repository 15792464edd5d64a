"""Retractions: the system stops believing a fact (``invalidated_at`` = now).

Rows stay, so ``as_of`` an earlier instant still sees them; unknown names are
ignored, as the reference MCP memory server ignores them. Hard deletion is
``erasure``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Table, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.entities import Known, candidates, pick
from truemem_core.graph.names import norm
from truemem_core.graph.records import RelationSpec
from truemem_core.graph.tables import chunks
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations

e, o, r = graph_entities, graph_observations, graph_relations


async def entities(conn: AsyncConnection, user: str, names: Sequence[str], now: datetime) -> int:
    """Retract the named entities with their observations and relations."""
    found = Known(await candidates(conn, user, {norm(name) for name in names}))
    ids = sorted({x.id for x in map(found.pick, names, [None] * len(names)) if x is not None})
    for part in chunks(ids):
        await conn.execute(update(e).where(e.c.user_id == user, e.c.id.in_(part))
                           .values(invalidated_at=now))
        await conn.execute(update(o).where(o.c.user_id == user, o.c.entity_id.in_(part),
                                           o.c.invalidated_at.is_(None))
                           .values(invalidated_at=now))
        await conn.execute(update(r).where(
            r.c.user_id == user, r.c.invalidated_at.is_(None),
            or_(r.c.source_id.in_(part), r.c.target_id.in_(part))).values(invalidated_at=now))
    return len(ids)


async def observations(
    conn: AsyncConnection, user: str, entity: str, texts: Sequence[str], now: datetime,
) -> int:
    owner = pick(await candidates(conn, user, {norm(entity)}), entity, None)
    if owner is None:
        return 0
    wanted = {norm(text) for text in texts}
    rows = await conn.execute(select(o.c.id, o.c.text).where(
        o.c.user_id == user, o.c.entity_id == owner.id, o.c.invalidated_at.is_(None)))
    ids = [row.id for row in rows if norm(row.text) in wanted]
    return await _invalidate(conn, o, user, ids, now)


async def relations(
    conn: AsyncConnection, user: str, specs: Sequence[RelationSpec], now: datetime,
) -> int:
    found = Known(await candidates(
        conn, user, {norm(n) for s in specs for n in (s.source, s.target)}))
    keys = set()
    for spec in specs:
        head = found.pick(spec.source, spec.source_type)
        tail = found.pick(spec.target, spec.target_type)
        if head is not None and tail is not None:
            keys.add((head.id, spec.type, tail.id))
    if not keys:
        return 0
    rows = await conn.execute(select(r.c.id, r.c.source_id, r.c.type, r.c.target_id).where(
        r.c.user_id == user, r.c.invalidated_at.is_(None),
        r.c.source_id.in_(sorted({key[0] for key in keys}))))
    ids = [row.id for row in rows if (row.source_id, row.type, row.target_id) in keys]
    return await _invalidate(conn, r, user, ids, now)


async def _invalidate(
    conn: AsyncConnection, table: Table, user: str, ids: list[str], now: datetime,
) -> int:
    if not ids:
        return 0
    await conn.execute(update(table).where(table.c.user_id == user, table.c.id.in_(ids))
                       .values(invalidated_at=now))
    return len(ids)
