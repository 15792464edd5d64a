"""The knowledge graph over MCP: the reference memory server's nine tools, and more.

An MCP client configured for ``@modelcontextprotocol/server-memory`` works unchanged
against TrueMem: the same tool names, arguments and JSON shapes (an entity is
``{name, entityType, observations}``, a relation ``{from, to, relationType}``), the
same text and structured content. On top of them:

* ``as_of`` / ``valid_at`` (ISO 8601) on the reading tools: the graph as TrueMem
  knew it at an instant, or as it was true in the world then. A deletion is a
  retraction, so ``as_of`` an earlier instant still sees what was deleted.
* causal chains: ``add_causal_relation`` (or a causal type with ``evidence`` in
  ``create_relations``), ``causes``, ``effects`` and ``path``, each hop with its
  evidence and its time line.

The tools act for the caller's user (``mcp_server.Caller``); none takes a user id. A
read-only key is shown only the reading tools. Every call goes through ``TrueMem``'s
async graph API. The shapes are built by pure functions (``graph_out``,
``search_graph``, ``open_graph``), so what a tool returns is testable without a store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from truemem_core import InvalidInputError, NotFoundError, TrueMemError
from truemem_core.graph.records import (
    CAUSAL_TYPES,
    Entity,
    EntitySpec,
    Graph,
    Hop,
    ObservationSpec,
    Relation,
    RelationSpec,
)
from truemem_server.mcp_server import Caller, CallerOf

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
    """A name as a lookup compares it: spaces collapsed, case folded."""
    return " ".join(name.split()).casefold()


def _names(entity: Entity) -> set[str]:
    return {handle(entity.name), *(handle(alias) for alias in entity.aliases)}


def relation_out(relation: Relation) -> RelationOut:
    return RelationOut(source=relation.source, target=relation.target,
                       relation_type=relation.type)


def _relations_out(relations: Iterable[Relation]) -> list[RelationOut]:
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
        relations=_relations_out(relations))


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
    return [e for e in graph.entities if _names(e) & wanted]


def open_graph(graph: Graph, names: Sequence[str]) -> GraphOut:
    return graph_out(graph, {e.id for e in named(graph, names)})


def matching(graph: Graph, relations: Iterable[RelationOut]) -> list[Relation]:
    """The graph's relations that one of ``relations`` names (ends by name or alias)."""
    wanted = {(handle(r.source), handle(r.relation_type), handle(r.target)) for r in relations}
    by_id = {e.id: _names(e) for e in graph.entities}
    return [r for r in graph.relations
            if any((a, handle(r.type), b) in wanted for a in by_id.get(r.source_id, ())
                   for b in by_id.get(r.target_id, ()))]


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def hop_out(relation: Relation, depth: int) -> HopOut:
    return HopOut(
        source=relation.source, relation_type=relation.type, target=relation.target,
        depth=depth, confidence=relation.confidence, evidence=relation.evidence,
        evidence_memory_ids=list(relation.evidence_memory_ids),
        evidence_message_ids=list(relation.evidence_message_ids),
        valid_from=_when(relation.valid_from), valid_to=_when(relation.valid_to),
        recorded_at=relation.recorded_at.isoformat(),
        invalidated_at=_when(relation.invalidated_at))


def hops_out(hops: Iterable[Hop]) -> list[HopOut]:
    return [hop_out(hop.relation, hop.depth) for hop in hops]


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


def _dumped(items: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True) for item in items]


def graph_error(error: TrueMemError, caller: Caller) -> ToolError:
    """A message the model can act on: never a storage id or a driver's text."""
    if isinstance(error, InvalidInputError | NotFoundError):
        return ToolError(str(error).replace(repr(caller.user), "this user")
                         .replace(caller.user, "this user"))
    return ToolError(f"TrueMem could not do that ({type(error).__name__}); try again later")


async def writer(caller_of: CallerOf) -> Caller:
    caller = await caller_of()
    if caller.read_only:
        raise ToolError("this key is read-only: it cannot change the graph")
    return caller


def _unknown(name: str) -> ToolError:
    return ToolError(f"Entity with name {name} not found: search_nodes or read_graph show "
                     "the names")


# -- tools -------------------------------------------------------------------------------

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)
ADD = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                      open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                         open_world_hint=False)

AsOf = Annotated[datetime | None, Field(description=(
    "TrueMem: the graph as it was known at this instant (ISO 8601, e.g. "
    "2026-03-15T12:00:00Z); deleted facts recorded before it are seen"))]
ValidAt = Annotated[datetime | None, Field(description=(
    "TrueMem: only what was true in the world at this instant (ISO 8601)"))]
Depth = Annotated[int, Field(ge=1, le=10, description="How many hops to follow at most")]
Name = Annotated[str, Field(description="The name of an entity")]


async def _graph(caller: Caller, as_of: datetime | None = None,
                 valid_at: datetime | None = None) -> Graph:
    try:
        return await caller.memory.agraph(caller.user, as_of=instant(as_of),
                                          valid_at=instant(valid_at))
    except TrueMemError as error:
        raise graph_error(error, caller) from error


def _reference_writes(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=ADD, title="Create Entities",
                 description="Create multiple new entities in the knowledge graph")
    async def create_entities(
        entities: Annotated[list[EntityIn], Field(max_length=MAX_ITEMS)],
    ) -> Annotated[CallToolResult, EntitiesOut]:
        caller = await writer(caller_of)
        graph = await _graph(caller)
        taken = {name for e in graph.entities for name in _names(e)}
        fresh: dict[str, EntityIn] = {}
        for entity in entities:  # a name already in the graph is left as it is
            if handle(entity.name) not in taken:
                fresh.setdefault(handle(entity.name), entity)
        try:
            made = await caller.memory.aadd_entities(
                caller.user, [EntitySpec(e.name, e.entity_type) for e in fresh.values()])
            await caller.memory.aadd_observations(caller.user, [
                ObservationSpec(e.name, text, entity_type=e.entity_type)
                for e in fresh.values() for text in dict.fromkeys(e.observations)])
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        before = {e.id for e in graph.entities}
        shown = [EntityOut(name=e.name, entity_type=e.type,
                           observations=list(dict.fromkeys(asked.observations)))
                 for asked, e in zip(fresh.values(), made, strict=True) if e.id not in before]
        return reply(_dumped(shown), EntitiesOut(entities=shown))

    @server.tool(annotations=ADD, title="Create Relations", description=(
        "Create multiple new relations between entities in the knowledge graph. Relations "
        "should be in active voice. A causal type (" + ", ".join(CAUSAL_TYPES) + ") with "
        "`evidence` links a causal chain (see causes, effects, path)."))
    async def create_relations(
        relations: Annotated[list[RelationIn], Field(max_length=MAX_ITEMS)],
    ) -> Annotated[CallToolResult, RelationsOut]:
        caller = await writer(caller_of)
        graph = await _graph(caller)
        before = {r.id for r in graph.relations}
        try:
            made = await caller.memory.aadd_relations(caller.user, [
                RelationSpec(r.source, r.relation_type, r.target, confidence=r.confidence,
                             evidence=r.evidence) for r in relations])
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        shown = _relations_out(r for r in made if r.id not in before)
        return reply(_dumped(shown), RelationsOut(relations=shown))

    @server.tool(annotations=ADD, title="Add Observations",
                 description="Add new observations to existing entities in the knowledge graph")
    async def add_observations(
        observations: Annotated[list[ObservationsIn], Field(max_length=MAX_ITEMS)],
    ) -> Annotated[CallToolResult, ResultsOut]:
        caller = await writer(caller_of)
        graph = await _graph(caller)
        results: list[AddedObservations] = []
        specs: list[ObservationSpec] = []
        for item in observations:
            entity = _one(graph, item.entity_name)
            known = {o.text for o in graph.observations if o.entity_id == entity.id}
            added = [text for text in dict.fromkeys(item.contents) if text not in known]
            known.update(added)
            specs += [ObservationSpec(entity.name, text, entity_type=entity.type)
                      for text in added]
            results.append(AddedObservations(entity_name=item.entity_name,
                                             added_observations=added))
        try:
            await caller.memory.aadd_observations(caller.user, specs)
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return reply(_dumped(results), ResultsOut(results=results))

    @server.tool(annotations=DELETE, title="Delete Entities", description=(
        "Delete multiple entities and their associated relations from the knowledge graph"))
    async def delete_entities(
        entityNames: Annotated[list[str], Field(
            max_length=MAX_ITEMS, description="An array of entity names to delete")],
    ) -> Annotated[CallToolResult, DoneOut]:
        caller = await writer(caller_of)
        graph = await _graph(caller)
        names = [e.name for e in named(graph, entityNames)]
        try:
            if names:
                await caller.memory.adelete_entities(caller.user, names)
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return _done("Entities deleted successfully")

    @server.tool(annotations=DELETE, title="Delete Observations",
                 description="Delete specific observations from entities in the knowledge graph")
    async def delete_observations(
        deletions: Annotated[list[ObservationsDeletion], Field(max_length=MAX_ITEMS)],
    ) -> Annotated[CallToolResult, DoneOut]:
        caller = await writer(caller_of)
        graph = await _graph(caller)
        try:
            for item in deletions:
                for entity in named(graph, [item.entity_name]):  # an unknown one: nothing
                    await caller.memory.adelete_observations(
                        caller.user, entity.id, list(item.observations))
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return _done("Observations deleted successfully")

    @server.tool(annotations=DELETE, title="Delete Relations",
                 description="Delete multiple relations from the knowledge graph")
    async def delete_relations(
        relations: Annotated[list[RelationOut], Field(
            max_length=MAX_ITEMS, description="An array of relations to delete")],
    ) -> Annotated[CallToolResult, DoneOut]:
        caller = await writer(caller_of)
        graph = await _graph(caller)
        found = matching(graph, relations)
        by_id = {e.id: e for e in graph.entities}
        try:
            if found:
                await caller.memory.adelete_relations(caller.user, [
                    RelationSpec(r.source, r.type, r.target, source_type=by_id[r.source_id].type,
                                 target_type=by_id[r.target_id].type) for r in found])
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return _done("Relations deleted successfully")


async def _missing(caller: Caller, *names: str) -> str:
    """Which of ``names`` names no entity (after a ``NotFoundError``)."""
    for name in names:
        try:
            await caller.memory.aget_entity(caller.user, name)
        except NotFoundError:
            return name
    return names[-1]


def _one(graph: Graph, name: str) -> Entity:
    found = named(graph, [name])
    if not found:
        raise _unknown(name)
    if len(found) > 1:
        types = ", ".join(sorted(e.type for e in found))
        raise ToolError(f"several entities are named {name} (types {types})")
    return found[0]


def _done(message: str) -> CallToolResult:
    return reply(message, DoneOut(success=True, message=message))


def _reference_reads(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=READ, title="Read Graph",
                 description="Read the entire knowledge graph")
    async def read_graph(as_of: AsOf = None, valid_at: ValidAt = None,
                         ) -> Annotated[CallToolResult, GraphOut]:
        shown = graph_out(await _graph(await caller_of(), as_of, valid_at))
        return reply(shown.model_dump(mode="json", by_alias=True), shown)

    @server.tool(annotations=READ, title="Search Nodes",
                 description="Search for nodes in the knowledge graph based on a query")
    async def search_nodes(
        query: Annotated[str, Field(max_length=2000, description=(
            "The search query to match against entity names, types, and observation content"))],
        as_of: AsOf = None, valid_at: ValidAt = None,
    ) -> Annotated[CallToolResult, GraphOut]:
        shown = search_graph(await _graph(await caller_of(), as_of, valid_at), query)
        return reply(shown.model_dump(mode="json", by_alias=True), shown)

    @server.tool(annotations=READ, title="Open Nodes",
                 description="Open specific nodes in the knowledge graph by their names")
    async def open_nodes(
        names: Annotated[list[str], Field(max_length=MAX_ITEMS, description=(
            "An array of entity names to retrieve"))],
        as_of: AsOf = None, valid_at: ValidAt = None,
    ) -> Annotated[CallToolResult, GraphOut]:
        shown = open_graph(await _graph(await caller_of(), as_of, valid_at), names)
        return reply(shown.model_dump(mode="json", by_alias=True), shown)


def _causal_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=ADD, title="Add Causal Relation", description=(
        "Record that `cause` caused (prevented, triggered, blocked, enabled, led_to, "
        "required, mitigated) `effect`, with the evidence: why you believe it. Missing "
        "entities are created. causes, effects and path follow these links."))
    async def add_causal_relation(
        cause: Name, relationType: CausalType, effect: Name,
        evidence: Annotated[str, Field(min_length=1, description=(
            "Why this holds: a quote, a ticket, what the user said"))],
        confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0,
        validFrom: Annotated[datetime | None, Field(description=(
            "When it became true in the world (ISO 8601); default: now"))] = None,
    ) -> HopOut:
        caller = await writer(caller_of)
        try:
            made = await caller.memory.aadd_relations(caller.user, [RelationSpec(
                cause, relationType, effect, confidence=confidence, evidence=evidence,
                valid_from=instant(validFrom))])
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return hop_out(made[0], 1)

    async def chain(name: str, depth: int, as_of: datetime | None, valid_at: datetime | None,
                    effects: bool) -> ChainOut:
        caller = await caller_of()
        follow = caller.memory.aeffects if effects else caller.memory.acauses
        try:
            hops = await follow(caller.user, name, depth=depth, as_of=instant(as_of),
                                valid_at=instant(valid_at))
        except NotFoundError as error:
            raise _unknown(name) from error
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return ChainOut(entity=name, hops=hops_out(hops))

    @server.tool(annotations=READ, title="Causes", description=(
        "Why did this happen? The causal chain leading to `entityName`, nearest first: "
        "each hop with its evidence and when it was true."))
    async def causes(entityName: Name, depth: Depth = 3,
                     as_of: AsOf = None, valid_at: ValidAt = None) -> ChainOut:
        return await chain(entityName, depth, as_of, valid_at, effects=False)

    @server.tool(annotations=READ, title="Effects", description=(
        "What did this lead to? The causal chain following from `entityName`, nearest "
        "first: each hop with its evidence and when it was true."))
    async def effects(entityName: Name, depth: Depth = 3,
                      as_of: AsOf = None, valid_at: ValidAt = None) -> ChainOut:
        return await chain(entityName, depth, as_of, valid_at, effects=True)

    @server.tool(annotations=READ, title="Path", description=(
        "How is `fromEntity` linked to `toEntity`? The shortest chain of relations between "
        "them, each with its evidence; empty when they are not linked."))
    async def path(fromEntity: Name, toEntity: Name,
                   maxDepth: Annotated[int, Field(ge=1, le=10)] = 6,
                   as_of: AsOf = None, valid_at: ValidAt = None) -> PathOut:
        caller = await caller_of()
        try:
            found = await caller.memory.apath(caller.user, fromEntity, toEntity,
                                              max_depth=maxDepth, as_of=instant(as_of),
                                              valid_at=instant(valid_at))
        except NotFoundError as error:
            raise _unknown(await _missing(caller, fromEntity, toEntity)) from error
        except TrueMemError as error:
            raise graph_error(error, caller) from error
        return PathOut(source=fromEntity, target=toEntity,
                       path=[hop_out(r, depth) for depth, r in enumerate(found, 1)])


GRAPH_TOOLS = frozenset({
    "create_entities", "create_relations", "add_observations", "delete_entities",
    "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes",
    "add_causal_relation", "causes", "effects", "path"})


def graph_tools(server: MCPServer, caller_of: CallerOf) -> None:
    """Register the graph's tools on ``server``; ``caller_of`` says who each call acts for."""
    _reference_writes(server, caller_of)
    _reference_reads(server, caller_of)
    _causal_tools(server, caller_of)
