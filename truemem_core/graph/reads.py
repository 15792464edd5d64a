"""Reads of the graph: lists with time travel, the entities a query names, their facts.

``find_entities`` and ``current_facts`` serve the search's graph channel.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.matching import mentioned
from truemem_core.graph.names import norm
from truemem_core.graph.records import Entity, Observation, Relation
from truemem_core.graph.tables import (
    entity_of,
    known,
    observation_of,
    observation_order,
    observations,
    recorded,
    relation_of,
    relation_order,
    relations,
    touching,
)
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations

e, o, r = graph_entities, graph_observations, graph_relations


async def list_entities(
    conn: AsyncConnection, user: str, *, type: str | None, query: str | None,
    as_of: datetime | None, limit: int | None, offset: int = 0,
) -> list[Entity]:
    """The user's entities held at ``as_of``, by name; ``query``: a case-insensitive part of
    a name, alias, type or observation."""
    statement = select(e).where(e.c.user_id == user, recorded(e, as_of))
    if type is not None:
        statement = statement.where(e.c.type == type)
    if query is not None and norm(query):
        part, lower = norm(query), query.strip().lower()
        statement = statement.where(or_(
            e.c.norm.contains(part, autoescape=True),
            e.c.alias_keys.contains(part, autoescape=True),
            e.c.type.contains(part.replace(" ", "_"), autoescape=True),
            exists().where(o.c.user_id == user, o.c.entity_id == e.c.id, recorded(o, as_of),
                           func.lower(o.c.text).contains(lower, autoescape=True))))
    rows = await conn.execute(statement.order_by(e.c.norm, e.c.type, e.c.id)
                              .limit(limit).offset(offset or None))
    return [entity_of(row) for row in rows]


async def list_observations(
    conn: AsyncConnection, user: str, entity_id: str | None, *, as_of: datetime | None,
    valid_at: datetime | None, of: Collection[str] | None = None,
) -> list[Observation]:
    """The observations of one entity, of the entities ``of``, or of all."""
    statement = observations(user).where(known(o, as_of, valid_at))
    if entity_id is not None:
        statement = statement.where(o.c.entity_id == entity_id)
    if of is not None:
        statement = statement.where(o.c.entity_id.in_(sorted(of)))
    rows = await conn.execute(statement.order_by(*observation_order()))
    return [observation_of(row) for row in rows]


async def list_relations(
    conn: AsyncConnection, user: str, entity_id: str | None, *, type: str | None,
    as_of: datetime | None, valid_at: datetime | None, limit: int | None = None,
    offset: int = 0,
) -> list[Relation]:
    statement = relations(user).where(known(r, as_of, valid_at), touching(entity_id))
    if type is not None:
        statement = statement.where(r.c.type == type)
    rows = await conn.execute(statement.order_by(*relation_order())
                              .limit(limit).offset(offset or None))
    return [relation_of(row) for row in rows]


async def find_entities(
    conn: AsyncConnection, user: str, query: str, *, limit: int
) -> list[Entity]:
    """The user's current entities whose name or alias the query mentions (exact after
    normalisation, alias, or trigram match), best first; one statement (the user's
    current entities), scored in Python (``matching``) on both backends."""
    rows = await conn.execute(select(e).where(e.c.user_id == user, e.c.invalidated_at.is_(None)))
    return mentioned([entity_of(row) for row in rows], query, limit)


async def current_facts(
    conn: AsyncConnection, user: str, entity_ids: Collection[str]
) -> tuple[list[Observation], list[Relation]]:
    """The current observations of ``entity_ids`` and their current one-hop relations
    (either direction)."""
    if not entity_ids:
        return [], []
    ids = sorted(entity_ids)
    facts = await conn.execute(observations(user).where(
        known(o, None, None), o.c.entity_id.in_(ids)).order_by(*observation_order()))
    links = await conn.execute(relations(user).where(
        known(r, None, None), or_(r.c.source_id.in_(ids), r.c.target_id.in_(ids)))
        .order_by(*relation_order()))
    return [observation_of(row) for row in facts], [relation_of(row) for row in links]
