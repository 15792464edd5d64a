"""Every version of one entity's observations and relations: the entity page's time line.

The core's graph reads answer for one instant (``as_of`` / ``valid_at``: what was
known then about then). A time line shows every row the system held, whatever its
world validity: current ones, ones closed in the world (``valid_to``: "used
PostgreSQL 14 until the migration") and, on request, ones retracted
(``invalidated_at``: deleted, or replaced by a newer version). Like the user list
(``users``), this is a read of the tables the core writes, for a page a person opens;
every statement is filtered by the user's storage id, so another user's entity id
finds nothing. Rows come back as the core's public records.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, FromClause, and_, or_, select, true

from truemem_core import Entity, Observation, Relation
from truemem_core.storage.database import Database
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations

MAX_ROWS = 500


def held(table: FromClause, as_of: datetime | None, retracted: bool) -> ColumnElement[bool]:
    """Rows recorded by ``as_of`` (any time when None), and, unless ``retracted``, not
    invalidated by then."""
    recorded = true() if as_of is None else table.c.recorded_at <= as_of
    if retracted:
        return recorded
    if as_of is None:
        return and_(recorded, table.c.invalidated_at.is_(None))
    return and_(recorded, or_(table.c.invalidated_at.is_(None),
                              table.c.invalidated_at > as_of))


def _observation(row: Any, entity: Entity) -> Observation:
    return Observation(
        id=row.id, entity_id=entity.id, entity=entity.name, text=row.text,
        confidence=row.confidence, source_memory_id=row.source_memory_id,
        source_message_id=row.source_message_id, valid_from=row.valid_from,
        valid_to=row.valid_to, recorded_at=row.recorded_at, invalidated_at=row.invalidated_at)


def _relation(row: Any) -> Relation:
    return Relation(
        id=row.id, source=row.source_name, type=row.type, target=row.target_name,
        source_id=row.source_id, target_id=row.target_id, confidence=row.confidence,
        evidence=row.evidence, evidence_memory_ids=tuple(row.evidence_memory_ids or ()),
        evidence_message_ids=tuple(row.evidence_message_ids or ()),
        valid_from=row.valid_from, valid_to=row.valid_to, recorded_at=row.recorded_at,
        invalidated_at=row.invalidated_at)


async def entity_timeline(
    db: Database, user: str, entity: Entity, *, as_of: datetime | None = None,
    retracted: bool = False,
) -> tuple[list[Observation], list[Relation]]:
    """``entity``'s observations and relations (either end), oldest recorded first, at
    most ``MAX_ROWS`` of each."""
    o, r = graph_observations, graph_relations
    source, target = graph_entities.alias("source"), graph_entities.alias("target")
    observations = (
        select(o).where(o.c.user_id == user, o.c.entity_id == entity.id,
                        held(o, as_of, retracted))
        .order_by(o.c.recorded_at, o.c.id).limit(MAX_ROWS))
    relations = (
        select(r, source.c.name.label("source_name"), target.c.name.label("target_name"))
        .join(source, and_(source.c.id == r.c.source_id, source.c.user_id == user))
        .join(target, and_(target.c.id == r.c.target_id, target.c.user_id == user))
        .where(r.c.user_id == user, or_(r.c.source_id == entity.id, r.c.target_id == entity.id),
               held(r, as_of, retracted))
        .order_by(r.c.recorded_at, r.c.id).limit(MAX_ROWS))
    async with db.transaction(readonly=True) as conn:
        found = [_observation(row, entity) for row in await conn.execute(observations)]
        linked = [_relation(row) for row in await conn.execute(relations)]
    return found, linked
