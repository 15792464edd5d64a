"""The search's graph channel: memories reached through the entities a query names.

``find_entities`` picks the user's entities the query mentions (exact words, an
alias, or close by trigrams; the user's own node, which every fact without a
subject points to, is left out). Their current observations and one-hop
relations lead to the memories they were derived from (``source_memory_id``,
``evidence_memory_ids``), and those memories are the channel's ranked list: a
memory scores ``confidence / (1 + position)`` for each of its facts touching an
entity, ``position`` being the entity's rank among the matches. The fusion then
weighs this list like the others (``weight_graph``).

Cost on the request path: one statement reading the user's current entities (a
user without a graph stops there), and, when the query names one, one statement
for their facts, restricted to the search's corpus (its filters, states and time
travel apply as to every channel). Both run while the query is being embedded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, String, cast, func, or_, select, true, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.names import norm
from truemem_core.graph.reads import find_entities
from truemem_core.graph.rules_mentions import USER
from truemem_core.storage.schema import graph_observations, graph_relations, memories

ENTITIES = 5
"""Entities a query brings at most."""

Ranking = list[tuple[str, float]]


async def graph_channel(
    conn: AsyncConnection, user: str, where: Sequence[ColumnElement[bool]], query: str, k: int,
    params: Mapping[str, Any] | None = None,
) -> Ranking:
    """The user's memories passing ``where`` (the search's conditions on ``memories``, with
    their bound ``params``) linked to the entities ``query`` names, best first (``k`` at most)."""
    found = [e.id for e in await find_entities(conn, user, query, limit=ENTITIES + 1)
             if norm(e.name) != USER][:ENTITIES]
    if not found:
        return []
    rows = await conn.execute(_facts(conn.dialect.name, user, where, found), dict(params or {}))
    return rank(found, rows)[:k]


def rank(entities: Sequence[str], facts: Iterable[Any]) -> Ranking:
    """Memories by the summed ``confidence / (1 + position)`` of their facts (pure).

    ``facts`` are rows (a, b, memory_id, confidence): an observation of entity ``a``
    (``b`` = ``a``) or a relation between ``a`` and ``b``.
    """
    position = {entity: n for n, entity in enumerate(entities)}
    scores: dict[str, float] = defaultdict(float)
    for row in facts:
        for end in {row.a, row.b} & position.keys():
            scores[row.memory_id] += row.confidence / (1 + position[end])
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _facts(
    dialect: str, user: str, where: Sequence[ColumnElement[bool]], entities: Sequence[str],
) -> Select[Any]:
    """Current observations and relations touching ``entities``, one row per (fact,
    memory it came from), kept when that memory is in the corpus: one statement."""
    o, r = graph_observations, graph_relations
    seen = select(o.c.entity_id.label("a"), o.c.entity_id.label("b"),
                  o.c.source_memory_id.label("memory_id"), o.c.confidence).where(
        o.c.user_id == user, o.c.invalidated_at.is_(None), o.c.valid_to.is_(None),
        o.c.entity_id.in_(entities), o.c.source_memory_id.is_not(None))
    each = _evidence(dialect)
    linked = select(r.c.source_id.label("a"), r.c.target_id.label("b"),
                    cast(each.c.value, String).label("memory_id"), r.c.confidence
                    ).select_from(r.join(each, true())).where(
        r.c.user_id == user, r.c.invalidated_at.is_(None), r.c.valid_to.is_(None),
        or_(r.c.source_id.in_(entities), r.c.target_id.in_(entities)))
    facts = union_all(seen, linked).subquery()
    return select(facts).join(memories, memories.c.id == facts.c.memory_id).where(*where)


def _evidence(dialect: str) -> Any:
    """A relation's evidence memory ids as rows (a JSON array, expanded per dialect)."""
    ids = graph_relations.c.evidence_memory_ids
    if dialect == "postgresql":
        return func.json_array_elements_text(ids).table_valued("value").lateral()
    return func.json_each(ids).table_valued("value")
