"""The knowledge graph over MCP: the reference memory server's nine tools, and more.

An MCP client configured for ``@modelcontextprotocol/server-memory`` works unchanged
against TrueMem: the same tool names, arguments and JSON (an entity is
``{name, entityType, observations}``, a relation ``{from, to, relationType}``), the
same text and structured content (``mcp_graph_shapes``). On top of them:

* ``as_of`` / ``valid_at`` (ISO 8601) on the reading tools: the graph as TrueMem
  knew it at an instant, or as it was true in the world then. A deletion is a
  retraction, so ``as_of`` an earlier instant still sees what was deleted.
* causal chains: ``add_causal_relation`` (or a causal type with ``evidence`` in
  ``create_relations``), ``causes``, ``effects`` and ``path``, each hop with its
  evidence and its time line.

The tools act for the caller's user (``mcp_caller.Caller``); none takes a user id. A
read-only key is listed only the reading tools. Every call goes through ``TrueMem``'s
async graph API; the reference tools read the user's graph once (``agraph``) and
shape or match it with pure functions, as the reference server reads its file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from truemem_core import (
    CAUSAL_TYPES,
    EntitySpec,
    Graph,
    InvalidInputError,
    NotFoundError,
    ObservationSpec,
    RelationSpec,
    TrueMemError,
    check_storable,
)
from truemem_server.mcp_caller import Caller, CallerOf
from truemem_server.mcp_graph_shapes import (
    MAX_ITEMS,
    AddedObservations,
    CausalType,
    ChainOut,
    DoneOut,
    EntitiesOut,
    EntityIn,
    EntityOut,
    GraphOut,
    HopOut,
    ObservationsDeletion,
    ObservationsIn,
    PathOut,
    RelationIn,
    RelationOut,
    RelationsOut,
    ResultsOut,
    dumped,
    entity_names,
    graph_out,
    handle,
    hop_out,
    hops_out,
    instant,
    matching,
    named,
    open_graph,
    relations_out,
    reply,
    search_graph,
)

RESOURCE_URI = "memory://knowledge-graph"  # the reference server's resource
GRAPH_TOOLS = frozenset({
    "create_entities", "create_relations", "add_observations", "delete_entities",
    "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes",
    "add_causal_relation", "causes", "effects", "path"})


# -- errors and callers ----------------------------------------------------------------


def graph_error(error: TrueMemError, caller: Caller) -> ToolError:
    """A message the model can act on: never a storage id or a driver's text."""
    if isinstance(error, InvalidInputError | NotFoundError):
        return ToolError(str(error).replace(repr(caller.user), "this user")
                         .replace(caller.user, "this user"))
    return ToolError(f"TrueMem could not do that ({type(error).__name__}); try again later")


def unknown(name: str) -> ToolError:
    """The reference server's words for a name that is not in the graph."""
    return ToolError(f"Entity with name {name} not found: search_nodes or read_graph show "
                     "the names")


async def writer(caller_of: CallerOf) -> Caller:
    caller = await caller_of()
    if caller.read_only:
        raise ToolError("this key is read-only: it cannot change the graph")
    return caller


async def read(caller: Caller, as_of: datetime | None = None,
               valid_at: datetime | None = None, *, limit: int | None = None,
               offset: int = 0) -> Graph:
    try:
        return await caller.memory.graph.aget(caller.user, as_of=instant(as_of),
                                              valid_at=instant(valid_at), limit=limit,
                                              offset=offset)
    except TrueMemError as error:
        raise graph_error(error, caller) from error


# -- what the tools do ---------------------------------------------------------------------


async def create_entities(caller: Caller, entities: list[EntityIn]) -> CallToolResult:
    """The entities whose name is new, with their observations; a name already in the
    graph (or an alias) is left as it is, as the reference server leaves it."""
    graph = await read(caller)
    taken = {name for e in graph.entities for name in entity_names(e)}
    fresh: dict[str, EntityIn] = {}
    for entity in entities:
        if handle(entity.name) not in taken:
            fresh.setdefault(handle(entity.name), entity)
    try:
        made = await caller.memory.graph.aadd_entities(
            caller.user, [EntitySpec(e.name, e.entity_type) for e in fresh.values()])
        await caller.memory.graph.aadd_observations(caller.user, [
            ObservationSpec(e.name, text, entity_type=e.entity_type)
            for e in fresh.values() for text in dict.fromkeys(e.observations)])
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    before = {e.id for e in graph.entities}
    shown = [EntityOut(name=e.name, entity_type=e.type,
                       observations=list(dict.fromkeys(asked.observations)))
             for asked, e in zip(fresh.values(), made, strict=True) if e.id not in before]
    return reply(dumped(shown), EntitiesOut(entities=shown))


async def add_observations(caller: Caller, observations: list[ObservationsIn]
                           ) -> CallToolResult:
    """Each entity's new statements (those it does not hold yet); an unknown entity is
    an error and nothing is written, as in the reference server."""
    graph = await read(caller)
    results: list[AddedObservations] = []
    specs: list[ObservationSpec] = []
    for item in observations:
        found = named(graph, [item.entity_name])
        if not found:
            raise unknown(item.entity_name)
        if len(found) > 1:
            types = ", ".join(sorted(e.type for e in found))
            raise ToolError(f"several entities are named {item.entity_name} (types {types})")
        entity = found[0]
        known = {o.text for o in graph.observations if o.entity_id == entity.id}
        added = [text for text in dict.fromkeys(item.contents) if text not in known]
        known.update(added)
        specs += [ObservationSpec(entity.name, text, entity_type=entity.type) for text in added]
        results.append(AddedObservations(entity_name=item.entity_name, added_observations=added))
    try:
        await caller.memory.graph.aadd_observations(caller.user, specs)
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return reply(dumped(results), ResultsOut(results=results))


async def create_relations(caller: Caller, relations: list[RelationIn]) -> CallToolResult:
    """The relations that are new (a current one is not repeated); missing entities
    are created."""
    before = {r.id for r in (await read(caller)).relations}
    try:
        made = await caller.memory.graph.aadd_relations(caller.user, [
            RelationSpec(r.source, r.relation_type, r.target, confidence=r.confidence,
                         evidence=r.evidence) for r in relations])
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    shown = relations_out(r for r in made if r.id not in before)
    return reply(dumped(shown), RelationsOut(relations=shown))


def done(message: str) -> CallToolResult:
    return reply(message, DoneOut(success=True, message=message))


async def delete_entities(caller: Caller, names: list[str]) -> CallToolResult:
    found = [e.name for e in named(await read(caller), names)]  # unknown names: nothing
    try:
        if found:
            await caller.memory.graph.adelete_entities(caller.user, found)
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return done("Entities deleted successfully")


async def delete_observations(caller: Caller, deletions: list[ObservationsDeletion]
                              ) -> CallToolResult:
    graph = await read(caller)
    try:
        for item in deletions:
            for entity in named(graph, [item.entity_name]):  # an unknown one: nothing
                await caller.memory.graph.adelete_observations(caller.user, entity.name,
                                                               list(item.observations))
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return done("Observations deleted successfully")


async def delete_relations(caller: Caller, relations: list[RelationOut]) -> CallToolResult:
    graph = await read(caller)
    types = {e.id: e.type for e in graph.entities}
    found = matching(graph, relations)
    try:
        if found:
            await caller.memory.graph.adelete_relations(caller.user, [
                RelationSpec(r.source, r.type, r.target, source_type=types[r.source_id],
                             target_type=types[r.target_id]) for r in found])
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return done("Relations deleted successfully")


async def shown_graph(caller: Caller, shape: Callable[[Graph], GraphOut],
                      as_of: datetime | None, valid_at: datetime | None, *,
                      limit: int | None = None, offset: int = 0) -> CallToolResult:
    shown = shape(await read(caller, as_of, valid_at, limit=limit, offset=offset))
    return reply(shown.model_dump(mode="json", by_alias=True), shown)


async def add_causal(caller: Caller, spec: RelationSpec) -> HopOut:
    try:
        made = await caller.memory.graph.aadd_relations(caller.user, [spec])
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return hop_out(made[0], 1, caller.message_ids)


async def chain(caller: Caller, name: str, *, depth: int, as_of: datetime | None,
                valid_at: datetime | None, effects: bool) -> ChainOut:
    follow = caller.memory.graph.aeffects if effects else caller.memory.graph.acauses
    try:
        hops = await follow(caller.user, name, depth=depth, as_of=instant(as_of),
                            valid_at=instant(valid_at))
    except NotFoundError as error:
        raise unknown(name) from error
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return ChainOut(entity=name, hops=hops_out(hops, caller.message_ids))


async def find_path(caller: Caller, a: str, b: str, *, max_depth: int,
                    as_of: datetime | None, valid_at: datetime | None) -> PathOut:
    try:
        found = await caller.memory.graph.apath(caller.user, a, b, max_depth=max_depth,
                                                as_of=instant(as_of), valid_at=instant(valid_at))
    except NotFoundError as error:
        raise unknown(await missing(caller, a, b)) from error
    except TrueMemError as error:
        raise graph_error(error, caller) from error
    return PathOut(source=a, target=b,
                   path=[hop_out(r, depth, caller.message_ids)
                         for depth, r in enumerate(found, 1)])


async def missing(caller: Caller, *names: str) -> str:
    """Which of ``names`` names no entity (after a ``NotFoundError``)."""
    for name in names:
        try:
            await caller.memory.graph.aget_entity(caller.user, name)
        except NotFoundError:
            return name
    return names[-1]


# -- the tools, as the model sees them -------------------------------------------------

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
GRAPH_PAGE = 1000  # read_graph's default page: a graph of 100,000 relations is no one reply
PageSize = Annotated[int, Field(ge=1, le=10_000, description=(
    "TrueMem: at most this many entities, and this many relations, in one reply; "
    "nextOffset in the reply says where the next page starts"))]
Offset = Annotated[int, Field(ge=0, description=(
    "TrueMem: where the page starts (a reply's nextOffset); keep as_of fixed to page "
    "through one instant"))]
Name = Annotated[str, Field(description="The name of an entity")]
Items = Field(max_length=MAX_ITEMS)


def _entity_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(name="create_entities", annotations=ADD, title="Create Entities",
                 description="Create multiple new entities in the knowledge graph")
    async def create_entities_(entities: Annotated[list[EntityIn], Items]
                               ) -> Annotated[CallToolResult, EntitiesOut]:
        return await create_entities(await writer(caller_of), entities)

    @server.tool(name="add_observations", annotations=ADD, title="Add Observations",
                 description="Add new observations to existing entities in the knowledge graph")
    async def add_observations_(observations: Annotated[list[ObservationsIn], Items]
                                ) -> Annotated[CallToolResult, ResultsOut]:
        return await add_observations(await writer(caller_of), observations)

    @server.tool(name="delete_entities", annotations=DELETE, title="Delete Entities", description=(
        "Delete multiple entities and their associated relations from the knowledge graph"))
    async def delete_entities_(entityNames: Annotated[list[str], Field(
            max_length=MAX_ITEMS, description="An array of entity names to delete")],
    ) -> Annotated[CallToolResult, DoneOut]:
        return await delete_entities(await writer(caller_of), entityNames)

    @server.tool(name="delete_observations", annotations=DELETE, title="Delete Observations",
                 description="Delete specific observations from entities in the knowledge graph")
    async def delete_observations_(deletions: Annotated[list[ObservationsDeletion], Items]
                                   ) -> Annotated[CallToolResult, DoneOut]:
        return await delete_observations(await writer(caller_of), deletions)


def _relation_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(name="create_relations", annotations=ADD, title="Create Relations", description=(
        "Create multiple new relations between entities in the knowledge graph. Relations "
        "should be in active voice. A causal type (" + ", ".join(CAUSAL_TYPES) + ") with "
        "`evidence` links a causal chain (see causes, effects, path)."))
    async def create_relations_(relations: Annotated[list[RelationIn], Items]
                                ) -> Annotated[CallToolResult, RelationsOut]:
        return await create_relations(await writer(caller_of), relations)

    @server.tool(name="delete_relations", annotations=DELETE, title="Delete Relations",
                 description="Delete multiple relations from the knowledge graph")
    async def delete_relations_(relations: Annotated[list[RelationOut], Field(
            max_length=MAX_ITEMS, description="An array of relations to delete")],
    ) -> Annotated[CallToolResult, DoneOut]:
        return await delete_relations(await writer(caller_of), relations)

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
        return await add_causal(await writer(caller_of), RelationSpec(
            cause, relationType, effect, confidence=confidence, evidence=evidence,
            valid_from=instant(validFrom)))


def _reading_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=READ, title="Read Graph",
                 description="Read the entire knowledge graph")
    async def read_graph(as_of: AsOf = None, valid_at: ValidAt = None,
                         limit: PageSize = GRAPH_PAGE, offset: Offset = 0,
                         ) -> Annotated[CallToolResult, GraphOut]:
        return await shown_graph(await caller_of(), graph_out, as_of, valid_at, limit=limit,
                                 offset=offset)

    @server.tool(annotations=READ, title="Search Nodes",
                 description="Search for nodes in the knowledge graph based on a query")
    async def search_nodes(
        query: Annotated[str, Field(max_length=2000, description=(
            "The search query to match against entity names, types, and observation content"))],
        as_of: AsOf = None, valid_at: ValidAt = None,
    ) -> Annotated[CallToolResult, GraphOut]:
        caller = await caller_of()
        try:  # matched here, not in SQL, but refused as every other entry point refuses it
            check_storable(query, "query")
        except InvalidInputError as error:
            raise graph_error(error, caller) from error
        return await shown_graph(caller, lambda g: search_graph(g, query), as_of, valid_at)

    @server.tool(annotations=READ, title="Open Nodes",
                 description="Open specific nodes in the knowledge graph by their names")
    async def open_nodes(
        names: Annotated[list[str], Field(max_length=MAX_ITEMS, description=(
            "An array of entity names to retrieve"))],
        as_of: AsOf = None, valid_at: ValidAt = None,
    ) -> Annotated[CallToolResult, GraphOut]:
        return await shown_graph(await caller_of(), lambda g: open_graph(g, names),
                                 as_of, valid_at)


def _chain_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=READ, title="Causes", description=(
        "Why did this happen? The causal chain leading to `entityName`, nearest first: "
        "each hop with its evidence and when it was true."))
    async def causes(entityName: Name, depth: Depth = 3,
                     as_of: AsOf = None, valid_at: ValidAt = None) -> ChainOut:
        return await chain(await caller_of(), entityName, depth=depth, as_of=as_of,
                           valid_at=valid_at, effects=False)

    @server.tool(annotations=READ, title="Effects", description=(
        "What did this lead to? The causal chain following from `entityName`, nearest "
        "first: each hop with its evidence and when it was true."))
    async def effects(entityName: Name, depth: Depth = 3,
                      as_of: AsOf = None, valid_at: ValidAt = None) -> ChainOut:
        return await chain(await caller_of(), entityName, depth=depth, as_of=as_of,
                           valid_at=valid_at, effects=True)

    @server.tool(annotations=READ, title="Path", description=(
        "How is `fromEntity` linked to `toEntity`? The shortest chain of relations between "
        "them, each with its evidence; empty when they are not linked."))
    async def path(fromEntity: Name, toEntity: Name,
                   maxDepth: Annotated[int, Field(ge=1, le=10)] = 6,
                   as_of: AsOf = None, valid_at: ValidAt = None) -> PathOut:
        return await find_path(await caller_of(), fromEntity, toEntity, max_depth=maxDepth,
                               as_of=as_of, valid_at=valid_at)


def _graph_resource(server: MCPServer, caller_of: CallerOf) -> None:
    @server.resource(RESOURCE_URI, name="knowledge-graph", title="Knowledge Graph",
                     description="The full knowledge graph with all entities and relations",
                     mime_type="application/json")
    async def knowledge_graph() -> str:
        shown = graph_out(await read(await caller_of()))
        return json.dumps(shown.model_dump(mode="json", by_alias=True), indent=2,
                          ensure_ascii=False)


def graph_tools(server: MCPServer, caller_of: CallerOf) -> None:
    """Register the graph's tools, and its resource ``memory://knowledge-graph`` (the
    whole graph, as read_graph answers), on ``server``; ``caller_of`` says who each
    call acts for."""
    _entity_tools(server, caller_of)
    _relation_tools(server, caller_of)
    _reading_tools(server, caller_of)
    _chain_tools(server, caller_of)
    _graph_resource(server, caller_of)
