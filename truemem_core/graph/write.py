"""The graph's write path: ``apply_facts`` (extraction and the add_* calls).

The caller owns the transaction and holds the user's lock. Every handle is
resolved first, in memory (an ambiguous name raises before anything is
written); then entities, observations and relations are written in a few
statements. Nothing is updated in place but an entity's aliases and a current
relation's evidence ids (provenance, not the fact): a fact already current is
not written twice, and a ``replaces`` closes the old relation by invalidating it
and opening a copy that ends (``valid_to``) where the new one starts, so that
``as_of`` an earlier instant still sees it open.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph import entities as lookup
from truemem_core.graph.names import alias_keys, norm
from truemem_core.graph.records import Entity, GraphFacts, Observation, Relation, RelationSpec
from truemem_core.graph.tables import relation_of
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations


@dataclass
class Applied:
    """What ``apply_facts`` found or wrote, one per spec, in the specs' order."""

    entities: list[Entity] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


@dataclass
class _Entities:
    """The batch's entities: found in the store, or new (inserted together)."""

    user: str
    known: lookup.Known
    new: dict[str, Entity] = field(default_factory=dict)
    aliased: dict[str, Entity] = field(default_factory=dict)
    source_memory_id: str | None = None

    def get(self, name: str, kind: str | None, now: datetime) -> Entity:
        found = self.known.pick(name, kind)
        if found is None:
            found = Entity(str(uuid.uuid4()), self.user, name, kind or "thing", (), now)
            self.known.put(found)
            self.new[found.id] = found
        return found

    def add_aliases(self, entity: Entity, aliases: tuple[str, ...]) -> Entity:
        have = {norm(entity.name), *map(norm, entity.aliases)}
        extra = tuple(a for a in aliases if norm(a) not in have)
        if not extra:
            return entity
        grown = replace(entity, aliases=entity.aliases + extra)
        self.known.put(grown)
        (self.new if entity.id in self.new else self.aliased)[entity.id] = grown
        return grown


def _keys(facts: GraphFacts) -> set[str]:
    names = [spec.name for spec in facts.entities]
    names += [spec.entity for spec in facts.observations]
    for rel in facts.relations:
        names += [rel.source, rel.target, *([rel.replaces] if rel.replaces else [])]
    return {norm(name) for name in names}


def _resolve(facts: GraphFacts, batch: _Entities, now: datetime) -> Applied:
    """Every handle of ``facts`` to an entity (new ones made in memory)."""
    applied = Applied()
    for spec in facts.entities:
        found = batch.get(spec.name, spec.type, now)
        applied.entities.append(batch.add_aliases(found, spec.aliases))
    for obs in facts.observations:
        batch.get(obs.entity, obs.entity_type, now)
    for rel in facts.relations:
        batch.get(rel.source, rel.source_type, now)
        batch.get(rel.target, rel.target_type, now)
        if rel.replaces:
            batch.known.pick(rel.replaces, None)  # ambiguous: raise before writing
    return applied


async def _write_entities(conn: AsyncConnection, user: str, batch: _Entities) -> None:
    if batch.new:
        await conn.execute(graph_entities.insert(), [
            {"id": x.id, "user_id": user, "name": x.name, "norm": norm(x.name), "type": x.type,
             "aliases": list(x.aliases), "alias_keys": alias_keys(x.aliases),
             "source_memory_id": batch.source_memory_id, "created_at": x.created_at}
            for x in batch.new.values()])
    for entity in batch.aliased.values():
        await conn.execute(update(graph_entities).where(graph_entities.c.id == entity.id).values(
            aliases=list(entity.aliases), alias_keys=alias_keys(entity.aliases)))


async def apply_facts(
    conn: AsyncConnection, user: str, facts: GraphFacts, *, source_memory_id: str | None,
    source_message_id: int | None, now: datetime,
) -> Applied:
    """Write ``facts`` for ``user``: entities found by handle or created, observations and
    relations opened unless the same fact is already current (idempotent); a relation's
    ``replaces`` closes the relation it replaces. Facts derived from a memory (a message)
    carry its id."""
    found = await lookup.candidates(conn, user, _keys(facts))
    batch = _Entities(user, lookup.Known(found), source_memory_id=source_memory_id)
    applied = _resolve(facts, batch, now)
    await _write_entities(conn, user, batch)
    source = _Source(source_memory_id, source_message_id, now)
    applied.observations = await _observations(conn, user, facts, batch, source)
    applied.relations = await _relations(conn, user, facts.relations, batch, source)
    return applied


@dataclass(frozen=True)
class _Source:
    memory_id: str | None
    message_id: int | None
    now: datetime


# -- observations -------------------------------------------------------------------


async def _observations(
    conn: AsyncConnection, user: str, facts: GraphFacts, batch: _Entities, source: _Source,
) -> list[Observation]:
    if not facts.observations:
        return []
    o = graph_observations
    owners = {obs.entity: batch.get(obs.entity, obs.entity_type, source.now)
              for obs in facts.observations}
    rows = await conn.execute(select(o).where(
        o.c.user_id == user, o.c.invalidated_at.is_(None), o.c.valid_to.is_(None),
        o.c.entity_id.in_(sorted({x.id for x in owners.values()}))))
    current = {(row.entity_id, norm(row.text)): _observation(row, "") for row in rows}
    out, new = [], []
    for spec in facts.observations:
        owner = owners[spec.entity]
        key = (owner.id, norm(spec.text))
        if key not in current:
            current[key] = Observation(
                str(uuid.uuid4()), owner.id, owner.name, spec.text, spec.confidence,
                source.memory_id, source.message_id, spec.valid_from or source.now, None,
                source.now, None)
            new.append(current[key])
        out.append(replace(current[key], entity=owner.name))
    if new:
        await conn.execute(o.insert(), [
            {**{k: getattr(x, k) for k in Observation.__slots__ if k != "entity"},
             "user_id": user} for x in new])
    return out


def _observation(row: Any, entity: str) -> Observation:
    return Observation(row.id, row.entity_id, entity, row.text, row.confidence,
                       row.source_memory_id, row.source_message_id, row.valid_from,
                       row.valid_to, row.recorded_at, row.invalidated_at)


# -- relations ----------------------------------------------------------------------

_Key = tuple[str, str, str]


@dataclass
class _RelationWrites:
    now: datetime
    new: dict[str, Relation] = field(default_factory=dict)  # by id
    invalidated: list[str] = field(default_factory=list)
    evidence: dict[str, Relation] = field(default_factory=dict)


async def _relations(
    conn: AsyncConnection, user: str, specs: tuple[RelationSpec, ...], batch: _Entities,
    source: _Source,
) -> list[Relation]:
    if not specs:
        return []
    r = graph_relations
    names = {x.id: x.name for x in batch.known.by_id.values()}
    rows = await conn.execute(select(r).where(
        r.c.user_id == user, r.c.invalidated_at.is_(None),
        r.c.source_id.in_(sorted({batch.get(s.source, s.source_type, source.now).id
                                  for s in specs}))))
    current: dict[_Key, list[Relation]] = {}
    for row in rows:
        rel = relation_of(_Named(row, names))
        current.setdefault((rel.source_id, rel.type, rel.target_id), []).append(rel)
    writes = _RelationWrites(source.now)
    out = [_relation(spec, batch, current, writes, source) for spec in specs]
    await _write_relations(conn, user, writes)
    return out


class _Named:
    """A relation row with its entities' names (known in memory)."""

    def __init__(self, row: Any, names: dict[str, str]) -> None:
        self._row = row
        self.source_name = names.get(row.source_id, "")
        self.target_name = names.get(row.target_id, "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._row, name)


def _relation(
    spec: RelationSpec, batch: _Entities, current: dict[_Key, list[Relation]],
    writes: _RelationWrites, source: _Source,
) -> Relation:
    """The decision for one relation spec, applied to ``current`` and noted in ``writes``."""
    head = batch.get(spec.source, spec.source_type, source.now)
    tail = batch.get(spec.target, spec.target_type, source.now)
    start = spec.valid_from or source.now
    if spec.replaces:
        old = batch.known.pick(spec.replaces, None)
        if old is not None and old.id != tail.id:
            _close(current.get((head.id, spec.type, old.id), []), start, writes, source)
    rows = current.setdefault((head.id, spec.type, tail.id), [])
    for rel in rows:
        if rel.valid_to is None:
            return _with_evidence(rel, rows, writes, source)
    start = max([start, *(rel.valid_to for rel in rows if rel.valid_to is not None)])
    rel = Relation(
        str(uuid.uuid4()), head.name, spec.type, tail.name, head.id, tail.id, spec.confidence,
        spec.evidence, (source.memory_id,) if source.memory_id else (),
        (source.message_id,) if source.message_id is not None else (), start, None,
        source.now, None)
    rows.append(rel)
    writes.new[rel.id] = rel
    return rel


def _close(rows: list[Relation], end: datetime, writes: _RelationWrites, source: _Source) -> None:
    """Close the open relations of ``rows`` at ``end``: invalidate each, open a closed copy."""
    for index, rel in enumerate(rows):
        if rel.valid_to is not None:
            continue
        if rel.id in writes.new:
            del writes.new[rel.id]
        else:
            writes.invalidated.append(rel.id)
            writes.evidence.pop(rel.id, None)
        valid_to = max(end, rel.valid_from) if rel.valid_from else end
        rows[index] = replace(rel, id=str(uuid.uuid4()), valid_to=valid_to,
                              recorded_at=source.now)
        writes.new[rows[index].id] = rows[index]


def _with_evidence(
    rel: Relation, rows: list[Relation], writes: _RelationWrites, source: _Source,
) -> Relation:
    memory_ids = rel.evidence_memory_ids
    message_ids = rel.evidence_message_ids
    if source.memory_id and source.memory_id not in memory_ids:
        memory_ids += (source.memory_id,)
    if source.message_id is not None and source.message_id not in message_ids:
        message_ids += (source.message_id,)
    if (memory_ids, message_ids) == (rel.evidence_memory_ids, rel.evidence_message_ids):
        return rel
    grown = replace(rel, evidence_memory_ids=memory_ids, evidence_message_ids=message_ids)
    rows[rows.index(rel)] = grown
    if rel.id in writes.new:
        writes.new[rel.id] = grown
    else:
        writes.evidence[rel.id] = grown
    return grown


_COLUMNS = ("id", "source_id", "type", "target_id", "confidence", "evidence", "valid_from",
            "valid_to", "recorded_at", "invalidated_at")


async def _write_relations(conn: AsyncConnection, user: str, writes: _RelationWrites) -> None:
    r = graph_relations
    if writes.invalidated:
        await conn.execute(update(r).where(r.c.user_id == user, r.c.id.in_(writes.invalidated))
                           .values(invalidated_at=writes.now))
    for rel in writes.evidence.values():
        await conn.execute(update(r).where(r.c.id == rel.id).values(
            evidence_memory_ids=list(rel.evidence_memory_ids),
            evidence_message_ids=list(rel.evidence_message_ids)))
    if writes.new:
        await conn.execute(r.insert(), [
            {**{k: getattr(rel, k) for k in _COLUMNS}, "user_id": user,
             "evidence_memory_ids": list(rel.evidence_memory_ids),
             "evidence_message_ids": list(rel.evidence_message_ids)}
            for rel in writes.new.values()])
