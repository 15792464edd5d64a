"""Rows to records, the statements that read them, and the time filters (no I/O).

Time travel, for observations and relations:
    system (``as_of=t``):  recorded_at <= t < invalidated_at   (no ``as_of``: not invalidated)
    world (``valid_at=w``): valid_from <= w < valid_to           (NULL ends are open)
``w`` defaults to ``as_of``, then to now: without arguments, what is known now
about now; with ``as_of`` alone, what was known then about then.
Entities have no world time: ``as_of`` alone decides whether one is seen.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, FromClause, Select, Text, and_, cast, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.records import Entity, Observation, Relation
from truemem_core.storage.schema import (
    graph_entities,
    graph_observations,
    graph_relations,
    utcnow,
)

T = TypeVar("T")

# Terms of one OR of LIKEs: SQLite refuses an expression tree deeper than 1,000, and
# a statement per few hundred keys keeps a 10,000-item batch linear on both backends.
CHUNK = 200

_SOURCE = graph_entities.alias("source_entity")
_TARGET = graph_entities.alias("target_entity")
_OWNER = graph_entities.alias("owner_entity")


def relation_order() -> tuple[Any, ...]:
    r = graph_relations
    return (r.c.valid_from, r.c.recorded_at, _SOURCE.c.norm, r.c.type, _TARGET.c.norm, r.c.id)


def observation_order() -> tuple[Any, ...]:
    o = graph_observations
    return (o.c.valid_from, o.c.recorded_at, _OWNER.c.norm, o.c.text, o.c.id)


def recorded(table: FromClause, as_of: datetime | None) -> ColumnElement[bool]:
    """Rows the system held at ``as_of`` (now when None)."""
    if as_of is None:
        return table.c.invalidated_at.is_(None)
    start = table.c.created_at if "created_at" in table.c else table.c.recorded_at
    return and_(start <= as_of, or_(table.c.invalidated_at.is_(None),
                                    table.c.invalidated_at > as_of))


def valid(table: FromClause, at: datetime) -> ColumnElement[bool]:
    """Rows true in the world at ``at``."""
    return and_(or_(table.c.valid_from.is_(None), table.c.valid_from <= at),
                or_(table.c.valid_to.is_(None), table.c.valid_to > at))


def known(table: FromClause, as_of: datetime | None, valid_at: datetime | None
          ) -> ColumnElement[bool]:
    """Both filters, as the module docstring says."""
    return and_(recorded(table, as_of), valid(table, valid_at or as_of or utcnow()))


def entity_of(row: Any) -> Entity:
    return Entity(id=row.id, user_id=row.user_id, name=row.name, type=row.type,
                  aliases=tuple(row.aliases or ()), created_at=row.created_at)


def observations(user: str) -> Select[Any]:
    o = graph_observations
    return (select(o, _OWNER.c.name.label("entity_name"))
            .join(_OWNER, _OWNER.c.id == o.c.entity_id)
            .where(o.c.user_id == user))


def observation_of(row: Any) -> Observation:
    return Observation(
        id=row.id, entity_id=row.entity_id, entity=row.entity_name, text=row.text,
        confidence=row.confidence, source_memory_id=row.source_memory_id,
        source_message_id=row.source_message_id, valid_from=row.valid_from,
        valid_to=row.valid_to, recorded_at=row.recorded_at, invalidated_at=row.invalidated_at)


def relations(user: str) -> Select[Any]:
    r = graph_relations
    return (select(r, _SOURCE.c.name.label("source_name"), _TARGET.c.name.label("target_name"))
            .join(_SOURCE, _SOURCE.c.id == r.c.source_id)
            .join(_TARGET, _TARGET.c.id == r.c.target_id)
            .where(r.c.user_id == user))


def evidence_ids(value: object) -> list[str]:
    """A relation's evidence ids as stored (a JSON list; text from some drivers)."""
    if isinstance(value, str):
        value = json.loads(value)
    return [str(item) for item in value] if isinstance(value, list) else []


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


async def citing(
    conn: AsyncConnection, user: str, memory_ids: Collection[str], *where: Any
) -> list[Any]:
    """The user's relations (rows, ``where`` also holding) whose evidence names one of
    ``memory_ids``: a LIKE per id narrows, the parsed evidence decides."""
    r = graph_relations
    wanted, evidence = set(memory_ids), cast(r.c.evidence_memory_ids, Text)
    found: dict[str, Any] = {}
    for part in chunks(sorted(wanted)):
        for row in await conn.execute(select(r).where(
                r.c.user_id == user, *where,
                or_(*(evidence.contains(i, autoescape=True) for i in part)))):
            if set(evidence_ids(row.evidence_memory_ids)) & wanted:
                found[row.id] = row
    return list(found.values())


def relation_of(row: Any) -> Relation:
    return Relation(
        id=row.id, source=row.source_name, type=row.type, target=row.target_name,
        source_id=row.source_id, target_id=row.target_id, confidence=row.confidence,
        evidence=row.evidence, evidence_memory_ids=tuple(row.evidence_memory_ids or ()),
        evidence_message_ids=tuple(row.evidence_message_ids or ()),
        valid_from=row.valid_from, valid_to=row.valid_to, recorded_at=row.recorded_at,
        invalidated_at=row.invalidated_at)


def touching(entity_id: str | None) -> ColumnElement[bool]:
    """Relations with ``entity_id`` at either end (all when None)."""
    r = graph_relations
    if entity_id is None:
        return true()
    return or_(r.c.source_id == entity_id, r.c.target_id == entity_id)
