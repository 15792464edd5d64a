"""Every version of one entity's observations and relations: its time line.

The other reads answer for one instant (``as_of`` / ``valid_at``: what was known
then about then). A time line lists every row the system held about the entity,
whatever its world validity: current rows, rows closed in the world (``valid_to``:
"used PostgreSQL 14 until the migration") and, on request, rows retracted
(``invalidated_at``: deleted, or replaced by a newer version). The inspector's
entity page shows it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, FromClause, true
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.records import Observation, Relation
from truemem_core.graph.tables import (
    observation_of,
    observations,
    recorded,
    relation_of,
    relations,
    touching,
)
from truemem_core.storage.schema import graph_observations, graph_relations

MAX_ROWS = 500  # of each kind: a page a person reads


def _held(table: FromClause, as_of: datetime | None, retracted: bool) -> ColumnElement[bool]:
    """Rows recorded by ``as_of`` (ever, when None), and unless ``retracted`` not yet
    invalidated then."""
    if not retracted:
        return recorded(table, as_of)
    return true() if as_of is None else table.c.recorded_at <= as_of


async def timeline(
    conn: AsyncConnection, user: str, entity_id: str, *, as_of: datetime | None,
    retracted: bool,
) -> tuple[list[Observation], list[Relation]]:
    """``entity_id``'s observations and relations (either end), oldest recorded first, at
    most ``MAX_ROWS`` of each."""
    o, r = graph_observations, graph_relations
    found = await conn.execute(
        observations(user).where(o.c.entity_id == entity_id, _held(o, as_of, retracted))
        .order_by(o.c.recorded_at, o.c.id).limit(MAX_ROWS))
    linked = await conn.execute(
        relations(user).where(touching(entity_id), _held(r, as_of, retracted))
        .order_by(r.c.recorded_at, r.c.id).limit(MAX_ROWS))
    return [observation_of(row) for row in found], [relation_of(row) for row in linked]
