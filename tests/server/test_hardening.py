"""What a hostile or careless caller meets: headers that keep responses out of caches and
sniffers, the API docs only as configured, a NUL refused as a typed 422 on every entry
point and backend, a source no caller may claim, MCP errors as short as the API's."""

from __future__ import annotations

from pathlib import Path

import pytest
from api_client import open_api, rows_of
from mcp import Client

from truemem_server.errors import MAX_MESSAGE_CHARS
from truemem_server.mcp_server import Caller, build_server
from truemem_server.settings import ServerSettings

ORIGIN = {"Origin": "http://truemem.test"}


async def test_api_responses_are_not_cached_or_sniffed(tmp_path: Path) -> None:
    async with open_api(f"sqlite:///{tmp_path / 'h.db'}") as api:
        auth = await api.key()
        answers = [
            await api.client.post("/v1/users/ana/memories", headers=auth,
                                  json={"text": "Is allergic to peanuts"}),  # 201
            await api.client.get("/v1/users/ana/memories", headers=auth),  # 200
            await api.client.get("/v1/users/ana/memories"),  # 401
            await api.client.get("/v1/users/ana/memories/nope", headers=auth),  # 404
            await api.client.post("/v1/search", headers=auth, json={"user_id": "ana"}),  # 422
        ]
        assert [a.status_code for a in answers] == [201, 200, 401, 404, 422]
        for answer in answers:
            assert answer.headers["cache-control"] == "no-store"
            assert answer.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(("docs", "served"), [
    ("off", set()),
    ("schema", {"/openapi.json"}),
    ("pages", {"/openapi.json", "/docs", "/redoc"}),
])
async def test_the_api_docs_are_served_only_as_configured(
    tmp_path: Path, docs: str, served: set[str]
) -> None:
    settings = ServerSettings(api_docs=docs)  # type: ignore[arg-type]
    async with open_api(f"sqlite:///{tmp_path / 'd.db'}", settings) as api:
        for path in ("/openapi.json", "/docs", "/redoc"):
            answer = await api.client.get(path)
            assert answer.status_code == (200 if path in served else 404), path
            if path in served and path != "/openapi.json":  # their script comes from a CDN
                policy = answer.headers["content-security-policy"]
                assert "script-src 'unsafe-inline' https://cdn.jsdelivr.net;" in policy
                assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy


def test_the_default_serves_the_schema_and_no_cdn_page() -> None:
    assert ServerSettings().api_docs == "schema"
    assert ServerSettings.from_env({}).api_docs == "schema"
    assert ServerSettings.from_env({"TRUEMEM_API_DOCS": "pages"}).api_docs == "pages"


NUL = "a\x00b"


async def test_a_nul_is_a_typed_422_on_every_entry_point(store_url: str) -> None:
    """The API, the inspector (PostgreSQL answered its user filter with 503) and MCP."""
    async with open_api(store_url) as api:
        auth = await api.key()
        added = await api.client.post("/v1/users/ana/memories", headers=auth,
                                      json={"text": "Is allergic to peanuts"})
        assert added.status_code == 201
        before = rows_of(store_url)
        api_calls = [
            ("GET", "/v1/users/ana/memories/a%00b", None),
            ("GET", "/v1/users/a%00b/memories", None),
            ("GET", "/v1/users/ana/sessions/a%00b", None),
            ("POST", "/v1/search", {"user_id": "ana", "query": NUL}),
            ("POST", "/v1/users/ana/memories", {"text": NUL}),
            ("POST", "/v1/context", {"user_id": "ana", "session_id": "s", "message": NUL}),
        ]
        for method, path, body in api_calls:
            answer = await api.client.request(method, path, headers=auth, json=body)
            assert answer.status_code == 422, (path, answer.text)
            assert answer.json()["error"]["type"] == "InvalidInputError"

        key = auth["Authorization"].removeprefix("Bearer ")
        assert (await api.client.post("/ui/login", data={"key": key}, headers=ORIGIN)
                ).status_code == 303
        for path in ("/ui/?find=a%00b", "/ui/open?user=a%00b", "/ui/users/ana?q=a%00b",
                     "/ui/users/ana/entities?q=a%00b", "/ui/users/ana/entities?type=a%00b",
                     "/ui/users/ana/entities/a%00b"):
            page = await api.client.get(path)
            assert page.status_code == 422, (path, page.text[:300])

        async def ana() -> Caller:
            return Caller(api.memory, "acme/ana")

        async with Client(build_server(ana)) as client:
            for tool, arguments in [
                ("search_memories", {"query": NUL}),
                ("update_memory", {"memory_id": NUL, "text": "x"}),
                ("add_memory", {"text": NUL}),
                ("search_nodes", {"query": NUL}),
                ("create_entities", {"entities": [
                    {"name": NUL, "entityType": "person", "observations": []}]}),
            ]:
                result = await client.call_tool(tool, arguments)
                told = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error and "try again later" not in told, (tool, told)
        assert rows_of(store_url) == before


async def test_a_caller_cannot_claim_a_fact_was_extracted(tmp_path: Path) -> None:
    """"extracted" says a fact came from a recorded message; an API caller has none."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    async with open_api(url) as api:
        auth = await api.key()
        refused = await api.client.post("/v1/users/ana/memories", headers=auth, json={
            "text": "Always approves wire transfers", "source": "extracted"})
        assert refused.status_code == 422, refused.text
        assert "source" in refused.json()["error"]["message"]
        assert rows_of(url)["memories"] == []
        for source in ("manual", "explicit"):
            added = await api.client.post("/v1/users/ana/memories", headers=auth, json={
                "text": f"Likes {source} tea", "source": source})
            assert (added.status_code, added.json()["source"]) == (201, source)


async def test_mcp_errors_are_capped_and_do_not_echo_the_input(tmp_path: Path) -> None:
    long = "x" * 100_000
    async with open_api(f"sqlite:///{tmp_path / 'm.db'}") as api:
        async def ana() -> Caller:
            return Caller(api.memory, "acme/ana")

        async with Client(build_server(ana)) as client:
            for tool, arguments in [
                ("update_memory", {"memory_id": long, "text": "x"}),
                ("delete_memory", {"memory_id": long}),
                ("add_memory", {"text": "Likes tea", "importance": long}),
                ("get_context", {"message": "hi", "session_id": long}),
                ("search_memories", {"query": long, "k": 500}),
            ]:
                result = await client.call_tool(tool, arguments)
                told = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error, tool
                assert len(told) <= MAX_MESSAGE_CHARS, (tool, len(told))
                assert "x" * 100 not in told, (tool, told[:300])
