"""Stored facts into the graph: the extraction job's step after each memory write.

The graph facts of a fact are the LLM's (``CandidateFact.graph``, read strictly
by ``graph.extraction_parse``: a malformed part is logged and dropped) when it
gave them, else what the rules read in its text (``graph.rules``). They are written
by ``apply_facts`` in the memory write's transaction, carrying the memory's id
and the message's, valid from when the message was said.

A change closes relations the way it closes memories. When the new memory
superseded stored ones (``memory.write``: "Migrated to PostgreSQL 16" closes
"Uses PostgreSQL 14"), each current relation from the same entity, of the same
type, that one of those memories was evidence of, is replaced by the new
relation; so is a relation to another version of the same tool ("uses
PostgreSQL 14" -> "uses PostgreSQL 16"). The old relation gets ``valid_to`` and
both stay queryable with ``valid_at``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from truemem_core.errors import InvalidInputError, NotFoundError
from truemem_core.graph.extraction_parse import MalformedGraph, parse_graph_json
from truemem_core.graph.names import norm
from truemem_core.graph.records import GraphFacts, ObservationSpec, RelationSpec
from truemem_core.graph.rules import graph_facts
from truemem_core.graph.rules_mentions import USER
from truemem_core.graph.write import apply_facts
from truemem_core.storage.schema import graph_entities, graph_relations, memories

log = logging.getLogger("truemem.graph")

_VERSION = re.compile(r"^(?P<base>.+?)\s+v?\d+(?:\.\d+)*$")


@dataclasses.dataclass(frozen=True, slots=True)
class Current:
    """A current relation that a new one may close: its ends' names, type, evidence."""

    source: str
    type: str
    target: str
    evidence_memory_ids: tuple[str, ...]


async def store_graph(
    conn: AsyncConnection, user: str, text: str, given: str | None, *,
    memory_id: str, message_id: int | None, said_at: datetime | None, now: datetime,
) -> None:
    """Write the graph facts of the stored fact ``text`` (memory ``memory_id``): those
    of ``given`` (the LLM's graph part, JSON, read strictly), else the rules'.

    A graph the store refuses (a name that matches entities of two types) is logged
    and skipped: the memory stays, as a malformed LLM graph part would leave it.
    """
    facts = typed_user(_given(given, text) or graph_facts(text))
    if not facts:
        return
    facts = dated(facts, said_at)
    if facts.relations:
        superseded = await _superseded_by(conn, user, memory_id)
        current = await _current(conn, user, facts.relations)
        facts = dataclasses.replace(
            facts, relations=replacements(facts.relations, current, superseded))
    try:
        await apply_facts(conn, user, facts, source_memory_id=memory_id,
                          source_message_id=message_id, now=now)
    except (InvalidInputError, NotFoundError) as exc:
        log.warning("graph facts of %r not stored: %s", text, exc)


# -- pure ----------------------------------------------------------------------------


def _given(given: str | None, text: str) -> GraphFacts | None:
    """The LLM's graph part; None (the rules read the fact) when absent or malformed."""
    if given is None:
        return None
    try:
        return parse_graph_json(given)
    except MalformedGraph as exc:
        log.warning("dropped a malformed graph part of %r (%s): %s", text, exc, given[:2_000])
        return None


def typed_user(facts: GraphFacts) -> GraphFacts:
    """The user, named "user" by rules and prompt alike, is always a person."""
    def person(name: str, kind: str | None) -> str | None:
        return "person" if kind is None and norm(name) == USER else kind

    return GraphFacts(
        facts.entities,
        tuple(dataclasses.replace(o, entity_type=person(o.entity, o.entity_type))
              for o in facts.observations),
        tuple(dataclasses.replace(r, source_type=person(r.source, r.source_type),
                                  target_type=person(r.target, r.target_type))
              for r in facts.relations))


def dated(facts: GraphFacts, said_at: datetime | None) -> GraphFacts:
    """Facts without a start of their own hold from when they were said."""
    if said_at is None:
        return facts
    observations: tuple[ObservationSpec, ...] = tuple(
        o if o.valid_from else dataclasses.replace(o, valid_from=said_at)
        for o in facts.observations)
    relations: tuple[RelationSpec, ...] = tuple(
        r if r.valid_from else dataclasses.replace(r, valid_from=said_at)
        for r in facts.relations)
    return GraphFacts(facts.entities, observations, relations)


def replacements(
    new: Sequence[RelationSpec], current: Iterable[Current], superseded: Collection[str],
) -> tuple[RelationSpec, ...]:
    """``new``, each relation without ``replaces`` repeated once per current relation it
    ends: same source and type, another target, and either evidenced by a memory the new
    fact superseded, or another version of the same tool."""
    current = list(current)
    out: list[RelationSpec] = []
    for spec in new:
        ended = [] if spec.replaces else [
            old.target for old in current
            if norm(old.source) == norm(spec.source) and old.type == spec.type
            and norm(old.target) != norm(spec.target)
            and (set(old.evidence_memory_ids) & set(superseded)
                 or _same_tool(old.target, spec.target))]
        out.extend([dataclasses.replace(spec, replaces=target) for target in ended] or [spec])
    return tuple(out)


def _same_tool(old: str, new: str) -> bool:
    """ "PostgreSQL 14" and "PostgreSQL 16": one tool, two versions."""
    a, b = _VERSION.match(old), _VERSION.match(new)
    return a is not None and b is not None and norm(a["base"]) == norm(b["base"])


# -- reads ---------------------------------------------------------------------------


async def _superseded_by(conn: AsyncConnection, user: str, memory_id: str) -> list[str]:
    rows = await conn.execute(select(memories.c.id).where(
        memories.c.user_id == user, memories.c.superseded_by == memory_id))
    return [row.id for row in rows]


async def _current(
    conn: AsyncConnection, user: str, specs: Sequence[RelationSpec]
) -> list[Current]:
    """The current relations from the new relations' sources, of their types (one read:
    the sources by name, then their relations by source, never all the user's)."""
    r, source, target = graph_relations, aliased(graph_entities), aliased(graph_entities)
    named = select(graph_entities.c.id).where(
        graph_entities.c.user_id == user,
        graph_entities.c.norm.in_(sorted({norm(s.source) for s in specs})))
    rows: Any = await conn.execute(
        select(source.c.name.label("source"), r.c.type, target.c.name.label("target"),
               r.c.evidence_memory_ids)
        .join(source, source.c.id == r.c.source_id).join(target, target.c.id == r.c.target_id)
        .where(r.c.user_id == user, r.c.source_id.in_(named), r.c.invalidated_at.is_(None),
               r.c.valid_to.is_(None), r.c.type.in_(sorted({s.type for s in specs}))))
    return [Current(row.source, row.type, row.target, tuple(row.evidence_memory_ids or ()))
            for row in rows]
