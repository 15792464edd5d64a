"""The MCP server through the SDK's own client: over stdio (a subprocess) and over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from api_client import live_server as serve
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from truemem_core import TrueMem
from truemem_server.app import create_app
from truemem_server.keys import KeyStore
from truemem_server.mcp_graph import GRAPH_TOOLS

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"get_context", "record", "search_memories", "add_memory", "update_memory",
         "delete_memory", "list_memories"} | GRAPH_TOOLS  # the graph's: test_mcp_graph.py


CLI = ["-m", "truemem_core.cli", "mcp"]  # `truemem mcp`, whatever the PATH holds
MODULE = ["-m", "truemem_server.mcp_server"]


def stdio(*args: str, env: dict[str, str] | None = None,
          command: list[str] = CLI) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[*command, *args], env=env, cwd=str(ROOT))


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """The tool's structured result (a list comes wrapped as ``{"result": […]}``)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    content = result.structured_content
    assert content is not None
    return content.get("result", content) if set(content) == {"result"} else content


async def round_trip(client: Client) -> str:
    """Every tool once, as an assistant would use them; returns the id of the kept memory."""
    assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
    added = await call(client, "add_memory", text="Is allergic to peanuts", importance=5)
    assert (added["text"], added["importance"], added["source"]) == (
        "Is allergic to peanuts", 5, "manual")
    assert [m["id"] for m in await call(client, "list_memories")] == [added["id"]]
    hits = await call(client, "search_memories", query="peanut allergy", k=3)
    assert hits[0]["memory"]["id"] == added["id"]
    assert "keyword #1" in hits[0]["why"]
    context = await call(client, "get_context", message="What should I cook tonight?",
                         session_id="s1")
    assert "] Is allergic to peanuts" in context
    recorded = await call(client, "record", session_id="s1",
                          user_message="What should I cook tonight?",
                          assistant_message="A peanut-free curry.")
    assert recorded["assistant_message_id"] != recorded["user_message_id"]
    tool_call = await call(client, "record", session_id="s1", user_message="And tomorrow?",
                           assistant_message="\u200b")  # a tool-calling reply: nothing visible
    assert tool_call["assistant_message_id"] is None and tool_call["user_message_id"]
    temporary = await call(client, "add_memory", text="Is in Porto this week",
                           kind="episodic")
    edited = await call(client, "update_memory", memory_id=temporary["id"],
                        text="Is in Lisbon this week", importance=2)
    assert (edited["text"], edited["importance"]) == ("Is in Lisbon this week", 2)
    assert await call(client, "delete_memory", memory_id=temporary["id"]) == {
        "deleted": temporary["id"]}
    missing = await client.call_tool("delete_memory", {"memory_id": temporary["id"]})
    assert missing.is_error
    assert "no memory" in missing.content[0].text  # type: ignore[union-attr]
    return str(added["id"])


async def test_stdio_lists_the_tools_and_round_trips_a_memory(store_url: str) -> None:
    async with Client(stdio("--user", "ana", "--database", store_url)) as client:
        kept = await round_trip(client)
    with TrueMem(store_url) as memory:
        assert [m.id for m in memory.list_memories("ana")] == [kept]
        assert memory.list_memories("bob") == []


async def test_stdio_takes_the_user_and_the_database_from_the_environment(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    env = {"TRUEMEM_MCP_USER": "carla", "TRUEMEM_DATABASE_URL": url}
    async with Client(stdio(env=env, command=MODULE)) as client:
        await call(client, "add_memory", text="Prefers tea to coffee")
    with TrueMem(url) as memory:
        assert [m.text for m in memory.list_memories("carla")] == ["Prefers tea to coffee"]


def test_stdio_without_a_user_says_how_to_give_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRUEMEM_MCP_USER"}
    done = subprocess.run(
        [sys.executable, *CLI, "--database", str(tmp_path / "x.db")], cwd=ROOT, env=env,
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2
    assert "--user" in done.stderr and "TRUEMEM_MCP_USER" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "x.db").exists()


def test_stdio_with_a_padded_user_says_so_at_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRUEMEM_MCP_USER"}
    done = subprocess.run(
        [sys.executable, *CLI, "--user", "ana ", "--database", str(tmp_path / "x.db")],
        cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        timeout=60)
    assert done.returncode == 2
    assert "user_id has a space at its start or end" in done.stderr
    assert not (tmp_path / "x.db").exists()


# -- streamable HTTP, mounted on the API app -------------------------------------------


@dataclass
class Served:
    url: str
    keys: dict[str, str]
    memory: TrueMem


def make_keys(url: str) -> dict[str, str]:
    async def create() -> dict[str, str]:
        store = KeyStore(url)
        try:
            made = {
                "acme": (await store.create("acme"))[1],
                "acme_ana": (await store.create("acme", user="ana"))[1],
                "acme_reader": (await store.create("acme", read_only=True))[1],
                "beta": (await store.create("beta"))[1],
                "revoked": (await store.create("acme"))[1],
            }
            await store.revoke(made["revoked"])
            return made
        finally:
            await store.close()

    return asyncio.run(create())


@pytest.fixture
def served(memory: TrueMem) -> Iterator[Served]:
    keys = make_keys(memory.admin.database_url)
    with serve(create_app(memory)) as base:
        yield Served(f"{base}/mcp", keys, memory)


@contextlib.asynccontextmanager
async def http_client(served: Served, key: str, user: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {served.keys[key]}"}
    if user is not None:
        headers["X-TrueMem-User"] = user
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(
            streamable_http_client(served.url, http_client=http)) as client:
        yield client


async def test_http_lists_the_tools_and_round_trips_a_memory(served: Served) -> None:
    async with http_client(served, "acme_ana") as client:
        kept = await round_trip(client)
    assert [m.id for m in await served.memory.alist_memories("acme/ana")] == [kept]
    assert await served.memory.alist_memories("ana") == []


def initialize(headers: dict[str, str], url: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    return httpx2.post(url, json=body, timeout=30, headers={
        "Accept": "application/json, text/event-stream", **headers})


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 401),
    ({"Authorization": "Bearer tm_0123456789abcdef_" + "x" * 43}, 401),
    ({"Authorization": "Basic dXNlcjpwYXNz"}, 401),
    ({"Cookie": "truemem_key={acme}", "X-TrueMem-User": "ana"}, 401),  # cookies do not count
    ({"Authorization": "Bearer {revoked}", "X-TrueMem-User": "ana"}, 401),
    ({"Authorization": "Bearer {acme}"}, 400),  # a tenant key names its user
    ({"Authorization": "Bearer {acme_ana}", "X-TrueMem-User": "bob"}, 403),
    ({"Authorization": "Bearer {acme}", "X-TrueMem-User": "a/b"}, 422),
    ({"Authorization": "Bearer {acme}", "X-TrueMem-User": "ana"}, 200),
], ids=["no-key", "unknown-key", "basic", "cookie", "revoked", "no-user", "other-user",
        "bad-user", "ok"])
async def test_http_refuses_a_request_without_a_valid_key(
    served: Served, headers: dict[str, str], status: int,
) -> None:
    sent = {name: value.format(**served.keys) for name, value in headers.items()}
    response = await asyncio.to_thread(initialize, sent, served.url)
    assert response.status_code == status, response.text
    if status != 200:
        assert response.json()["error"]["type"]
        assert served.keys["acme"] not in response.text


@pytest.mark.parametrize(("key", "query", "status"), [
    ("acme", "?user=ana", 200), ("acme_ana", "?user=ana", 200), ("acme_ana", "?user=bob", 403),
])
async def test_http_the_user_may_be_named_in_the_url(
    served: Served, key: str, query: str, status: int,
) -> None:
    headers = {"Authorization": f"Bearer {served.keys[key]}"}
    response = await asyncio.to_thread(initialize, headers, served.url + query)
    assert response.status_code == status, response.text


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def test_http_a_wrong_key_cannot_open_a_session(served: Served) -> None:
    served.keys["wrong"] = "tm_0123456789abcdef_" + "y" * 43
    with pytest.raises(BaseExceptionGroup) as raised:
        async with http_client(served, "wrong", "ana") as client:
            await client.list_tools()
    assert [type(leaf) for leaf in leaves(raised.value)] == [MCPError]


async def test_http_tenants_and_users_are_isolated(served: Served) -> None:
    async with http_client(served, "acme", "ana") as acme:
        secret = await call(acme, "add_memory", text="Is allergic to shellfish", importance=5)
    async with http_client(served, "beta", "ana") as beta:
        assert await call(beta, "list_memories") == []
        assert await call(beta, "search_memories", query="shellfish allergy") == []
        context = await call(beta, "get_context", message="Any allergies?")
        assert "shellfish" not in context
        for tool, arguments in [("delete_memory", {"memory_id": secret["id"]}),
                                ("update_memory", {"memory_id": secret["id"], "text": "x"})]:
            refused = await beta.call_tool(tool, arguments)
            assert refused.is_error
            assert "acme" not in refused.content[0].text  # type: ignore[union-attr]
    async with http_client(served, "acme", "bob") as bob:
        assert await call(bob, "list_memories") == []
    async with http_client(served, "acme_reader", "ana") as reader:
        assert [m["id"] for m in await call(reader, "list_memories")] == [secret["id"]]
        refused = await reader.call_tool("add_memory", {"text": "Likes jazz"})
        assert refused.is_error and "read-only" in refused.content[0].text  # type: ignore[union-attr]
    assert [m.text for m in await served.memory.alist_memories("acme/ana")] == [
        "Is allergic to shellfish"]
    assert await served.memory.alist_memories("beta/ana") == []
