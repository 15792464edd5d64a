"""The knowledge graph's MCP tools through the SDK's client, over stdio and over HTTP.

``reference_script`` is what a client written for the reference memory server
(``@modelcontextprotocol/server-memory``) sends, with the JSON that server answers:
TrueMem must answer the same, text and structured content alike.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from api_client import live_server as serve
from mcp import Client
from test_mcp import Served, http_client, make_keys, stdio

from truemem_core import Entity, Graph, Observation, ObservationSpec, Relation, TrueMem
from truemem_server.app import create_app
from truemem_server.mcp_graph import GRAPH_TOOLS
from truemem_server.mcp_graph_shapes import (
    RelationOut,
    graph_out,
    matching,
    open_graph,
    search_graph,
)
from truemem_server.mcp_server import Caller, build_server

READ_TOOLS = {"search_memories", "list_memories", "read_graph", "search_nodes", "open_nodes",
              "causes", "effects", "path"}


@pytest.fixture
def served(memory: TrueMem) -> Iterator[Served]:
    keys = make_keys(memory.admin.database_url)
    with serve(create_app(memory)) as base:
        yield Served(f"{base}/mcp", keys, memory)


async def tool(client: Client, name: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
    """A successful call's text (parsed when it is JSON) and structured content."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    try:
        return json.loads(text), result.structured_content
    except json.JSONDecodeError:
        return text, result.structured_content


async def refused(client: Client, name: str, **arguments: Any) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


def ordered(graph: dict[str, Any]) -> dict[str, Any]:
    """A graph with its entities by name and its relations sorted: the reference server
    keeps insertion order, which TrueMem's answer need not share."""
    return {"entities": sorted(graph["entities"], key=lambda e: e["name"]),
            "relations": sorted(graph["relations"],
                                key=lambda r: (r["from"], r["relationType"], r["to"]))}


ANA = {"name": "Ana", "entityType": "person", "observations": ["Lives in Lisbon",
                                                                "Works as a nurse"]}
TRUEMEM = {"name": "TrueMem", "entityType": "project", "observations": []}
POSTGRES = {"name": "PostgreSQL", "entityType": "tool", "observations": ["An SQL database"]}
REDIS = {"name": "Redis", "entityType": "tool", "observations": []}
WORKS_ON = {"from": "Ana", "to": "TrueMem", "relationType": "works_on"}
USES = {"from": "TrueMem", "to": "PostgreSQL", "relationType": "uses"}
CACHES = {"from": "TrueMem", "to": "Redis", "relationType": "uses"}


async def reference_script(client: Client) -> None:
    """Every tool of the reference server, with the answers that server gives."""
    shown, structured = await tool(client, "create_entities", entities=[ANA, TRUEMEM, POSTGRES])
    assert (shown, structured) == ([ANA, TRUEMEM, POSTGRES],
                                   {"entities": [ANA, TRUEMEM, POSTGRES]})
    again = await client.call_tool("create_entities", {"entities": [ANA, REDIS]})
    assert again.content[0].text == json.dumps([REDIS], indent=2)  # type: ignore[union-attr]
    assert again.structured_content == {"entities": [REDIS]}  # Ana existed: left as it was

    shown, structured = await tool(client, "create_relations", relations=[WORKS_ON, USES])
    assert (shown, structured) == ([WORKS_ON, USES], {"relations": [WORKS_ON, USES]})
    shown, _ = await tool(client, "create_relations", relations=[USES, CACHES])
    assert shown == [CACHES]

    shown, structured = await tool(client, "add_observations", observations=[
        {"entityName": "Ana", "contents": ["Lives in Lisbon", "Speaks Portuguese"]},
        {"entityName": "Redis", "contents": ["A cache"]}])
    assert shown == [{"entityName": "Ana", "addedObservations": ["Speaks Portuguese"]},
                     {"entityName": "Redis", "addedObservations": ["A cache"]}]
    assert structured == {"results": shown}
    assert "Entity with name Nobody not found" in await refused(
        client, "add_observations", observations=[{"entityName": "Nobody", "contents": ["x"]}])

    ana = {**ANA, "observations": [*ANA["observations"], "Speaks Portuguese"]}
    redis = {**REDIS, "observations": ["A cache"]}
    whole = {"entities": [ana, POSTGRES, redis, TRUEMEM], "relations": [WORKS_ON, USES, CACHES]}
    shown, structured = await tool(client, "read_graph")
    assert ordered(shown) == ordered(structured) == ordered(whole)

    shown, _ = await tool(client, "search_nodes", query="LISBON")  # an observation's words
    assert ordered(shown) == {"entities": [ana], "relations": [WORKS_ON]}
    shown, _ = await tool(client, "search_nodes", query="tool")  # a type
    assert ordered(shown) == ordered({"entities": [POSTGRES, redis], "relations": [USES, CACHES]})
    shown, _ = await tool(client, "search_nodes", query="nothing like it")
    assert shown == {"entities": [], "relations": []}
    shown, _ = await tool(client, "open_nodes", names=["TrueMem", "Nobody"])
    assert ordered(shown) == ordered({"entities": [TRUEMEM],
                                      "relations": [WORKS_ON, USES, CACHES]})

    await asyncio.sleep(0.05)
    before_deletes = datetime.now(UTC).isoformat()
    await asyncio.sleep(0.05)
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("delete_observations", {"deletions": [
            {"entityName": "Ana", "observations": ["Works as a nurse"]},
            {"entityName": "Nobody", "observations": ["x"]}]},
         "Observations deleted successfully"),
        ("delete_relations", {"relations": [USES]}, "Relations deleted successfully"),
        ("delete_entities", {"entityNames": ["Redis", "Nobody"]}, "Entities deleted successfully"),
    ]
    for name, arguments, message in steps:
        shown, structured = await tool(client, name, **arguments)
        assert (shown, structured) == (message, {"success": True, "message": message})

    shown, _ = await tool(client, "read_graph")
    ana_now = {**ANA, "observations": ["Lives in Lisbon", "Speaks Portuguese"]}
    assert ordered(shown) == ordered({"entities": [ana_now, POSTGRES, TRUEMEM],
                                      "relations": [WORKS_ON]})
    earlier, _ = await tool(client, "read_graph", as_of=before_deletes)
    assert ordered(earlier) == ordered(whole)  # a deletion is a retraction
    shown, _ = await tool(client, "open_nodes", names=["Redis"], as_of=before_deletes)
    assert shown == {"entities": [redis], "relations": [CACHES]}


async def test_the_reference_script_over_stdio(store_url: str) -> None:
    async with Client(stdio("--user", "ana", "--database", store_url)) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= GRAPH_TOOLS
        await reference_script(client)
    with TrueMem(store_url) as memory:
        assert sorted(e.name for e in memory.graph.list_entities("ana")) == [
            "Ana", "PostgreSQL", "TrueMem"]
        assert memory.graph.list_entities("bob") == []


async def test_the_reference_script_over_http(served: Served) -> None:
    async with http_client(served, "acme_ana") as client:
        await reference_script(client)
    assert len(await served.memory.graph.alist_entities("acme/ana")) == 3
    assert await served.memory.graph.alist_entities("ana") == []


async def test_a_read_only_key_sees_only_the_reading_tools(served: Served) -> None:
    async with http_client(served, "acme", "ana") as writer:
        await tool(writer, "create_entities", entities=[ANA])
    async with http_client(served, "acme_reader", "ana") as reader:
        assert {t.name for t in (await reader.list_tools()).tools} == READ_TOOLS
        shown, _ = await tool(reader, "open_nodes", names=["Ana"])
        assert shown == {"entities": [ANA], "relations": []}
        writes: list[tuple[str, dict[str, Any]]] = [("create_entities", {"entities": [REDIS]}),
                                ("delete_entities", {"entityNames": ["Ana"]}),
                                ("add_memory", {"text": "Likes jazz"})]
        for name, arguments in writes:
            assert "read-only" in await refused(reader, name, **arguments)
    assert [e.name for e in await served.memory.graph.alist_entities("acme/ana")] == ["Ana"]


async def test_two_users_graphs_never_mix(served: Served) -> None:
    async with http_client(served, "acme", "ana") as ana:
        await tool(ana, "create_entities", entities=[ANA, TRUEMEM])
        await tool(ana, "create_relations", relations=[WORKS_ON])
        await tool(ana, "add_causal_relation", cause="Ana", relationType="caused",
                   effect="TrueMem", evidence="She started it")
    for key, user in [("acme", "bob"), ("beta", "ana")]:
        async with http_client(served, key, user) as other:
            empty: dict[str, list[Any]] = {"entities": [], "relations": []}
            assert (await tool(other, "read_graph"))[0] == empty
            assert (await tool(other, "search_nodes", query="Ana"))[0] == empty
            assert (await tool(other, "open_nodes", names=["Ana", "TrueMem"]))[0] == empty
            assert "Entity with name Ana not found" in await refused(
                other, "path", fromEntity="Ana", toEntity="TrueMem")
            message = await refused(other, "effects", entityName="Ana")
            assert "not found" in message and "acme" not in message
            await tool(other, "delete_entities", entityNames=["Ana", "TrueMem"])
            made, _ = await tool(other, "create_entities", entities=[ANA])
            assert made == [ANA]  # a name of another user's graph is free here
    async with http_client(served, "acme", "ana") as ana:
        shown, _ = await tool(ana, "read_graph")
        assert ordered(shown)["entities"] == [ANA, TRUEMEM]
        assert len(shown["relations"]) == 2
    for user in ("acme/bob", "beta/ana"):
        assert [e.name for e in await served.memory.graph.alist_entities(user)] == ["Ana"]


CHAIN = [("Cheap VPS", "caused", "Disk full", "The VPS had a 10 GB disk"),
         ("Disk full", "triggered", "Outage", "Postgres stopped writing at 03:12"),
         ("Disk alerts", "mitigated", "Outage", "The on-call was paged in two minutes")]


async def test_causal_chains_with_their_evidence(memory: TrueMem) -> None:
    async def ana() -> Caller:
        return Caller(memory, "ana")

    async with Client(build_server(ana)) as client:
        made, structured = await tool(client, "add_causal_relation", cause=CHAIN[0][0],
                                      relationType=CHAIN[0][1], effect=CHAIN[0][2],
                                      evidence=CHAIN[0][3], confidence=0.8)
        assert made == structured
        assert (made["from"], made["relationType"], made["to"], made["evidence"],
                made["confidence"]) == (*CHAIN[0], 0.8)
        assert made["recordedAt"] and made["invalidatedAt"] is None
        await tool(client, "create_relations", relations=[
            {"from": a, "relationType": kind, "to": b, "evidence": why} for a, kind, b, why
            in CHAIN[1:]])
        assert "relationType" in await refused(  # only the eight causal types
            client, "add_causal_relation", cause="A", relationType="uses", effect="B",
            evidence="x")

        causes, _ = await tool(client, "causes", entityName="Outage")
        assert causes["entity"] == "Outage"
        assert sorted((h["depth"], h["from"], h["relationType"], h["to"], h["evidence"])
                      for h in causes["hops"]) == [
            (1, "Disk alerts", "mitigated", "Outage", CHAIN[2][3]),
            (1, "Disk full", "triggered", "Outage", CHAIN[1][3]),
            (2, "Cheap VPS", "caused", "Disk full", CHAIN[0][3])]
        near, _ = await tool(client, "causes", entityName="Outage", depth=1)
        assert {h["depth"] for h in near["hops"]} == {1}
        effects, _ = await tool(client, "effects", entityName="Cheap VPS")
        assert [(h["depth"], h["to"]) for h in effects["hops"]] == [(1, "Disk full"),
                                                                    (2, "Outage")]
        path, _ = await tool(client, "path", fromEntity="Cheap VPS", toEntity="Outage")
        assert [(h["depth"], h["from"], h["relationType"], h["to"], h["evidence"])
                for h in path["path"]] == [(1, *CHAIN[0]), (2, *CHAIN[1])]
        assert "Entity with name Nowhere not found" in await refused(
            client, "causes", entityName="Nowhere")


async def test_valid_at_keeps_what_was_true_then(memory: TrueMem) -> None:
    async def ana() -> Caller:
        return Caller(memory, "ana")

    march = datetime(2026, 3, 1, tzinfo=UTC)
    async with Client(build_server(ana)) as client:
        await tool(client, "add_causal_relation", cause="Migration", relationType="caused",
                   effect="Downtime", evidence="The ticket", validFrom=march.isoformat())
        before, _ = await tool(client, "effects", entityName="Migration",
                               valid_at=(march - timedelta(days=14)).isoformat())
        after, _ = await tool(client, "effects", entityName="Migration",
                              valid_at="2026-03-15")  # a date: midnight UTC
        assert before["hops"] == []
        assert [(h["to"], h["validFrom"]) for h in after["hops"]] == [
            ("Downtime", march.isoformat())]
        assert "valid_at" in await refused(client, "read_graph", valid_at="soon")


async def test_bad_input_is_a_tool_error_and_writes_nothing(memory: TrueMem) -> None:
    async def ana() -> Caller:
        return Caller(memory, "acme/ana")

    async with Client(build_server(ana)) as client:
        assert "entityType" in await refused(client, "create_entities",
                                             entities=[{"name": "Ana", "observations": []}])
        message = await refused(client, "create_entities", entities=[
            {"name": "Ana", "entityType": "person", "observations": []},
            {"name": "  ", "entityType": "person", "observations": []}])
        assert "acme" not in message and "Traceback" not in message
        assert "Traceback" not in await refused(client, "create_relations", relations=[
            {"from": "Ana", "to": "", "relationType": "knows"}])
    assert await memory.graph.alist_entities("acme/ana") == []


def test_the_shapes_are_pure_functions_of_the_graph() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    ana = Entity("e1", "u", "Ana", "person", ("Ana Silva",), now)
    pg = Entity("e2", "u", "PostgreSQL", "tool", (), now)

    def observation(id_: str, entity: Entity, text: str) -> Observation:
        return Observation(id_, entity.id, entity.name, text, 1.0, None, None, None, None,
                           now, None)

    def relation(id_: str, valid_from: datetime | None) -> Relation:
        return Relation(id_, "Ana", "uses", "PostgreSQL", "e1", "e2", 1.0, None, (), (),
                        valid_from, None, now, None)

    graph = Graph([ana, pg], [observation("o1", ana, "Lives in Lisbon"),
                              observation("o2", pg, "Version 16")],
                  [relation("r1", None), relation("r2", now)])  # one fact, re-stated
    dumped = graph_out(graph).model_dump(by_alias=True)
    assert dumped == {"entities": [
        {"name": "Ana", "entityType": "person", "observations": ["Lives in Lisbon"]},
        {"name": "PostgreSQL", "entityType": "tool", "observations": ["Version 16"]}],
        "relations": [{"from": "Ana", "to": "PostgreSQL", "relationType": "uses"}]}
    assert [e.name for e in search_graph(graph, "silva").entities] == ["Ana"]  # an alias
    assert [e.name for e in search_graph(graph, "version").entities] == ["PostgreSQL"]
    assert [e.name for e in open_graph(graph, ["ANA  SILVA"]).entities] == ["Ana"]
    asked = RelationOut(source=" ana", target="postgresql", relation_type="Uses")
    assert [r.id for r in matching(graph, [asked])] == ["r1", "r2"]
    assert matching(graph, [RelationOut(source="Ana", target="PostgreSQL",
                                        relation_type="used")]) == []


async def test_a_deleted_entity_can_be_created_again(memory: TrueMem) -> None:
    async def ana() -> Caller:
        return Caller(memory, "ana")

    async with Client(build_server(ana)) as client:
        start = datetime.now(UTC).isoformat()
        await asyncio.sleep(0.02)
        assert (await tool(client, "create_entities", entities=[ANA]))[0] == [ANA]
        await tool(client, "delete_entities", entityNames=["ana"])  # any case, as TrueMem matches
        between = (await tool(client, "read_graph"))[0]
        again = {**ANA, "observations": ["Moved to Porto"]}
        assert (await tool(client, "create_entities", entities=[again]))[0] == [again]
        assert (await tool(client, "read_graph"))[0] == {"entities": [again], "relations": []}
        assert between == {"entities": [], "relations": []}
        assert (await tool(client, "read_graph", as_of=start))[0] == between


async def test_the_graph_is_also_the_reference_servers_resource(memory: TrueMem) -> None:
    async def ana() -> Caller:
        return Caller(memory, "ana", read_only=True)

    await memory.graph.aadd_observations("ana", [ObservationSpec("Ana", "Lives in Lisbon",
                                                                 entity_type="person")])
    async with Client(build_server(ana)) as client:
        listed = (await client.list_resources()).resources
        assert [(str(r.uri), r.mime_type) for r in listed] == [
            ("memory://knowledge-graph", "application/json")]
        read = await client.read_resource("memory://knowledge-graph")
        text = read.contents[0].text  # type: ignore[union-attr]
        assert json.loads(text) == (await tool(client, "read_graph"))[0] == {
            "entities": [{"name": "Ana", "entityType": "person",
                          "observations": ["Lives in Lisbon"]}], "relations": []}


async def test_read_graph_comes_in_pages(served: Served) -> None:
    """A graph of 100,000 relations came back in one reply: now a page of 1,000 at most
    unless asked for more, and nextOffset where the next one starts."""
    async with http_client(served, "acme", "ana") as ana:
        await tool(ana, "create_entities", entities=[ANA, TRUEMEM, POSTGRES])
        whole, _ = await tool(ana, "read_graph")
        assert "nextOffset" not in whole and len(whole["entities"]) == 3
        first, structured = await tool(ana, "read_graph", limit=2)
        assert first == structured and first["nextOffset"] == 2
        rest, structured = await tool(ana, "read_graph", limit=2, offset=2)
        assert rest == structured and "nextOffset" not in rest
        assert first["entities"] + rest["entities"] == whole["entities"]
        assert "limit" in await refused(ana, "read_graph", limit=0)
