"""Message ids leave the server opaque, on both backends: the store's one counter (which
would tell a tenant how many messages every other tenant recorded in between) is never
shown. Each surface shows the same id for one message (HTTP, MCP, the inspector, the
export), every process and restart of the store shows it again, and a shown id finds
its message back (``MessageIds.stored``)."""

from __future__ import annotations

from typing import Any

import db_access
from api_client import open_api
from mcp import Client
from sqlalchemy import select

from truemem_core import TrueMem
from truemem_core.storage.schema import messages
from truemem_server.mcp_server import Caller, build_server
from truemem_server.message_ids import MessageIds, of_store

ANA = "/v1/users/ana"
SAID = {"user_id": "ana", "session_id": "s1", "assistant_message": "Noted."}


def stored_ids(url: str, user: str) -> list[int]:
    return [row.id for row in db_access.rows(url, select(messages.c.id).where(
        messages.c.user_id == user).order_by(messages.c.id))]


async def test_a_tenant_sees_opaque_message_ids_the_same_everywhere(store_url: str) -> None:
    async with open_api(store_url) as api:
        acme, globex = await api.key("acme"), await api.key("globex")
        shown: list[int] = []
        for n, words in enumerate(["I moved to Lisbon.", "I play the cello."]):
            answer = await api.client.post("/v1/record", headers=acme,
                                           json={**SAID, "user_message": words})
            assert answer.status_code == 201, answer.text
            shown += [answer.json()["user_message_id"], answer.json()["assistant_message_id"]]
            assert answer.json()["jobs"] and all(  # a job's key names its message
                int(key.split(":")[1]) in shown[-2:] for key in answer.json()["jobs"])
            await api.client.post("/v1/record", headers=globex, json={  # between ana's
                **SAID, "user_message": f"Other tenant's message {n}"})
        await api.memory.adrain()
        stored = stored_ids(store_url, "acme/ana")
        assert len(set(shown)) == 4 and not set(shown) & set(stored)
        assert all(0 <= i < 2**53 for i in shown)  # JSON numbers JavaScript reads exactly
        ids = await of_store(store_url)
        assert [ids.stored(i) for i in shown] == stored

        session = (await api.client.get(f"{ANA}/sessions/s1", headers=acme)).json()
        assert [m["id"] for m in session["recent"]] == shown
        context = (await api.client.post("/v1/context", headers=acme, json={
            "user_id": "ana", "session_id": "s1", "message": "Where do I live?"})).json()
        assert [m["id"] for m in context["recent_messages"]][:4] == shown
        cited = {m["source_message_id"] for m in context["facts"]} - {None}
        assert cited and cited <= set(shown)
        exported = (await api.client.get(f"{ANA}/export", headers=acme)).json()
        assert [m["id"] for m in exported["sessions"][0]["messages"]][:4] == shown
        assert {m["source_message_id"] for m in exported["memories"]} - {None} <= set(shown)

        page = (await _signed_in(api)).text
        assert any(f"from message #{i}" in page for i in cited)
        assert not any(f"message #{i}<" in page or f"message #{i} " in page for i in stored)

        # the export goes back in: what its memories cite is the imported messages
        imported = await api.client.post("/v1/users/ben/import", headers=acme, json=exported)
        assert imported.status_code == 201, imported.text
        ben = (await api.client.get("/v1/users/ben/sessions/s1", headers=acme)).json()
        assert {m["source_message_id"] for m in imported.json()} - {None} <= {
            m["id"] for m in ben["recent"]}

    async with TrueMem(store_url) as memory:  # another process, a re-embedded store
        await memory.admin.areembed()
        async with Client(build_server(_caller(memory, await of_store(store_url)))) as mcp:
            result = await mcp.call_tool("record", {"user_message": "And I like tea.",
                                                    "assistant_message": "Nice.",
                                                    "session_id": "s1"})
            assert not result.is_error, result.content
            said: Any = result.structured_content
    async with open_api(store_url) as api:
        session = (await api.client.get(f"{ANA}/sessions/s1", headers=await api.key("acme"),
                                        params={"recent": 6})).json()
        assert [m["id"] for m in session["recent"]] == [
            *shown, said["user_message_id"], said["assistant_message_id"]]


def _caller(memory: TrueMem, ids: MessageIds) -> Any:
    async def acme_ana() -> Caller:
        return Caller(memory, "acme/ana", ids=ids)
    return acme_ana


async def _signed_in(api: Any) -> Any:
    key = (await api.key("acme"))["Authorization"].removeprefix("Bearer ")
    origin = {"Origin": "http://truemem.test"}
    await api.client.post("/ui/login", data={"key": key}, headers=origin)
    return await api.client.get("/ui/users/ana")
