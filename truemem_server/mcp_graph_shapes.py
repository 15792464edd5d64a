"""The knowledge graph's MCP shapes: the reference memory server's JSON, and pure shaping.

The models carry the reference server's camelCase names on the wire
(``entityType``, ``relationType``, ``from``, ``to``, ``entityName``…) and Python
names in the code. The functions turn a ``Graph`` into what a tool answers
(``graph_out``, ``search_graph``, ``open_graph``) or find what a tool names
(``named``, ``matching``): no I/O, testable without a store.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from truemem_core import CAUSAL_TYPES, Entity, Graph, Hop, Relation
from truemem_server.message_ids import MessageIds

MAX_ITEMS = 1000
CausalType = Literal["caused", "prevented", "triggered", "blocked", "enabled", "led_to",
                     "required", "mitigated"]
assert set(CausalType.__args__) == set(CAUSAL_TYPES)  # type: ignore[attr-defined]


def wire(name: str, *args: Any, **kwargs: Any) -> Any:
    """A field whose JSON name is ``name`` (camelCase, as the reference server's)."""
    return Field(*args, validation_alias=name, serialization_alias=name, **kwargs)


class _Shape(BaseModel):
    """The reference server's camelCase on the wire; Python names in the code."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")


# -- the reference server's shapes ------------------------------------------------------


class EntityOut(_Shape):
    name: str = Field(description="The name of the entity")
    entity_type: str = wire("entityType", description="The type of the entity")
    observations: list[str] = Field(
        description="An array of observation contents associated with the entity")


class EntityIn(EntityOut):
    observations: list[str] = Field(default_factory=list, max_length=MAX_ITEMS, description=(
        "An array of observation contents associated with the entity"))


class RelationOut(_Shape):
    source: str = wire("from",
                        description="The name of the entity where the relation starts")
    target: str = wire("to", description="The name of the entity where the relation ends")
    relation_type: str = wire("relationType", description=(
        "The type of the relation, in active voice (uses, works_at); a causal type "
        f"({', '.join(CAUSAL_TYPES)}) makes it a link of a causal chain"))


class RelationIn(RelationOut):
    evidence: str | None = Field(None, description=(
        "TrueMem: why this relation holds (a quote, a ticket); shown with causal chains"))
    confidence: float = Field(1.0, ge=0.0, le=1.0, description="TrueMem: 0 to 1")


class ObservationsIn(_Shape):
    entity_name: str = wire("entityName",
                             description="The name of the entity to add the observations to")
    contents: list[str] = Field(max_length=MAX_ITEMS,
                                description="An array of observation contents to add")


class ObservationsDeletion(_Shape):
    entity_name: str = wire("entityName",
                             description="The name of the entity containing the observations")
    observations: list[str] = Field(max_length=MAX_ITEMS,
                                    description="An array of observations to delete")


class AddedObservations(_Shape):
    entity_name: str = wire("entityName")
    added_observations: list[str] = wire("addedObservations")


class EntitiesOut(_Shape):
    entities: list[EntityOut]


class RelationsOut(_Shape):
    relations: list[RelationOut]


class ResultsOut(_Shape):
    results: list[AddedObservations]


class DoneOut(_Shape):
    success: bool
    message: str


class GraphOut(_Shape):
    entities: list[EntityOut]
    relations: list[RelationOut]
    # read_graph's next page; absent after the last (the reference server's shape)
    next_offset: int | None = wire("nextOffset", default=None, exclude_if=lambda v: v is None)


# -- TrueMem's causal chains -----------------------------------------------------------


class HopOut(_Shape):
    """One relation of a chain with its evidence and its four timestamps."""

    source: str = wire("from")
    relation_type: str = wire("relationType")
    target: str = wire("to")
    depth: int = Field(description="How many hops from the entity asked about (1: direct)")
    confidence: float
    evidence: str | None
    evidence_memory_ids: list[str] = wire("evidenceMemoryIds")
    evidence_message_ids: list[int] = wire("evidenceMessageIds")
    valid_from: str | None = wire("validFrom")
    valid_to: str | None = wire("validTo")
    recorded_at: str = wire("recordedAt")
    invalidated_at: str | None = wire("invalidatedAt")


class ChainOut(_Shape):
    entity: str
    hops: list[HopOut]


class PathOut(_Shape):
    source: str = wire("from")
    target: str = wire("to")
    path: list[HopOut] = Field(description="The shortest chain, in order; empty when none")


# -- pure shaping --------------------------------------------------------------------------


def handle(name: str) -> str:
    """A name as TrueMem matches it: Unicode-normalised (NFKC), case folded, spaces
    collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def kind(relation_type: str) -> str:
    """A relation type as TrueMem stores it: ``works on`` is ``works_on``."""
    return "_".join(unicodedata.normalize("NFKC", relation_type).casefold().split())


def entity_names(entity: Entity) -> set[str]:
    return {handle(entity.name), *(handle(alias) for alias in entity.aliases)}


def relation_out(relation: Relation) -> RelationOut:
    return RelationOut(source=relation.source, target=relation.target,
                       relation_type=relation.type)


def relations_out(relations: Iterable[Relation]) -> list[RelationOut]:
    """Each (from, type, to) once, in order: a fact re-stated over time is one edge."""
    seen: set[tuple[str, str, str]] = set()
    shown: list[RelationOut] = []
    for relation in relations:
        key = (relation.source_id, relation.type, relation.target_id)
        if key not in seen:
            seen.add(key)
            shown.append(relation_out(relation))
    return shown


def graph_out(graph: Graph, entity_ids: set[str] | None = None) -> GraphOut:
    """The reference server's graph: entities with their observations' texts, relations.

    With ``entity_ids``, only those entities and the relations touching one of them
    (either end, as the reference server does)."""
    texts: dict[str, list[str]] = {}
    for observation in graph.observations:
        listed = texts.setdefault(observation.entity_id, [])
        if observation.text not in listed:
            listed.append(observation.text)
    kept = [e for e in graph.entities if entity_ids is None or e.id in entity_ids]
    relations = [r for r in graph.relations if entity_ids is None
                 or r.source_id in entity_ids or r.target_id in entity_ids]
    return GraphOut(
        entities=[EntityOut(name=e.name, entity_type=e.type, observations=texts.get(e.id, []))
                  for e in kept],
        relations=relations_out(relations), next_offset=graph.next_offset)


def search_graph(graph: Graph, query: str) -> GraphOut:
    """The reference server's search: entities whose name, alias, type or an observation
    contains ``query`` (case-insensitive), and the relations touching them."""
    needle = query.casefold()
    texts: dict[str, list[str]] = {}
    for observation in graph.observations:
        texts.setdefault(observation.entity_id, []).append(observation.text.casefold())
    found = {e.id for e in graph.entities
             if any(needle in text for text in (e.name.casefold(), e.type.casefold(),
                                                *(a.casefold() for a in e.aliases),
                                                *texts.get(e.id, ())))}
    return graph_out(graph, found)


def named(graph: Graph, names: Iterable[str]) -> list[Entity]:
    """The entities called by one of ``names`` (or an alias), in the graph's order."""
    wanted = {handle(name) for name in names}
    return [e for e in graph.entities if entity_names(e) & wanted]


def open_graph(graph: Graph, names: Sequence[str]) -> GraphOut:
    return graph_out(graph, {e.id for e in named(graph, names)})


def matching(graph: Graph, relations: Iterable[RelationOut]) -> list[Relation]:
    """The graph's relations that one of ``relations`` names (ends by name or alias)."""
    wanted = {(handle(r.source), kind(r.relation_type), handle(r.target)) for r in relations}
    by_id = {e.id: entity_names(e) for e in graph.entities}
    return [r for r in graph.relations
            if any((a, kind(r.type), b) in wanted for a in by_id.get(r.source_id, ())
                   for b in by_id.get(r.target_id, ()))]


def when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def hop_out(relation: Relation, depth: int, ids: MessageIds) -> HopOut:
    return HopOut(
        source=relation.source, relation_type=relation.type, target=relation.target,
        depth=depth, confidence=relation.confidence, evidence=relation.evidence,
        evidence_memory_ids=list(relation.evidence_memory_ids),
        evidence_message_ids=ids.many(relation.evidence_message_ids),
        valid_from=when(relation.valid_from), valid_to=when(relation.valid_to),
        recorded_at=relation.recorded_at.isoformat(),
        invalidated_at=when(relation.invalidated_at))


def hops_out(hops: Iterable[Hop], ids: MessageIds) -> list[HopOut]:
    return [hop_out(hop.relation, hop.depth, ids) for hop in hops]


def instant(value: datetime | None) -> datetime | None:
    """An ``as_of`` / ``valid_at`` argument: a time without a zone is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def reply(shown: Any, structured: BaseModel) -> CallToolResult:
    """What the reference server sends: ``shown`` as indented JSON text (or the text
    itself), and the structured content."""
    text = shown if isinstance(shown, str) else json.dumps(shown, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured.model_dump(mode="json", by_alias=True))


def dumped(items: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True) for item in items]
