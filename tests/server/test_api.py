"""The HTTP API through the real app on both backends: the two calls, memories, search,
sessions and users; tenants; typed errors, limits and health checks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from api_client import open_api, rows_of
from migration_steps import current, head, migrate
from sqlalchemy.engine import make_url

from truemem_core import StorageError
from truemem_server.keys import KeyStore
from truemem_server.settings import ServerSettings

ANA = "/v1/users/ana"


async def test_a_reply_with_nothing_visible_is_recorded_without_it(store_url: str) -> None:
    """A tool-calling model's reply holds nothing visible: the user's message is kept and
    the reply's id is null (it answered 500 after storing the message, so a retry stored
    it twice)."""
    async with open_api(store_url) as api:
        auth = await api.key()
        recorded = await api.client.post("/v1/record", headers=auth, json={
            "user_id": "ana", "session_id": "s1", "user_message": "Book the flight.",
            "assistant_message": "\u200b"})
        assert recorded.status_code == 201, recorded.text
        assert recorded.json()["assistant_message_id"] is None
        session = (await api.client.get(f"{ANA}/sessions/s1", headers=auth)).json()
        assert [m["content"] for m in session["recent"]] == ["Book the flight."]


async def test_the_two_calls_and_a_memory_round_trip(store_url: str) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        said = {"user_id": "ana", "session_id": "s1",
                "user_message": "Remember that I am allergic to peanuts.",
                "assistant_message": "Noted: no peanuts."}
        recorded = await api.client.post("/v1/record", json=said, headers=auth)
        assert recorded.status_code == 201, recorded.text
        shown = recorded.json()
        session = (await api.client.get(f"{ANA}/sessions/s1", headers=auth)).json()
        assert [m["id"] for m in session["recent"]] == [
            shown["user_message_id"], shown["assistant_message_id"]]
        await api.memory.adrain()
        added = await api.client.post(f"{ANA}/memories", headers=auth,
                                      json={"text": "Lives in Lisbon", "importance": 4})
        assert added.status_code == 201, added.text
        fact = added.json()
        assert (fact["user_id"], fact["text"], fact["importance"]) == ("ana", "Lives in Lisbon", 4)

        context = await api.client.post("/v1/context", headers=auth, json={
            "user_id": "ana", "session_id": "s1", "message": "Where do I live?"})
        assert context.status_code == 200, context.text
        body = context.json()
        assert body["user_id"] == "ana"
        assert fact["id"] in {m["id"] for m in body["facts"]}
        assert body["messages"][0]["role"] == "system"
        assert "] Lives in Lisbon" in body["messages"][0]["content"]
        assert body["messages"][-1] == {"role": "user", "content": "Where do I live?"}
        assert [m["content"] for m in body["recent_messages"]] == [
            said["user_message"], said["assistant_message"]]

        one = f"{ANA}/memories/{fact['id']}"
        changed = await api.client.patch(one, headers=auth, json={"text": "Lives in Porto"})
        assert changed.json()["text"] == "Lives in Porto"
        judged = await api.client.post(f"{one}/feedback", headers=auth,
                                       json={"verdict": "helpful"})
        assert judged.status_code == 200, judged.text
        history = (await api.client.get(f"{one}/history", headers=auth)).json()
        assert [e["action"] for e in history][:2] == ["added", "updated"]
        hits = (await api.client.post("/v1/search", headers=auth, json={
            "user_id": "ana", "query": "Porto", "k": 3, "kind": ["semantic"],
            "min_importance": 4})).json()
        assert hits[0]["memory"]["id"] == fact["id"]
        assert hits[0]["explanation"].startswith(f"{hits[0]['score']:.4g} = ")
        assert hits[0]["ranks"] and hits[0]["channels"]
        listed = (await api.client.get(f"{ANA}/memories", headers=auth)).json()
        assert fact["id"] in [m["id"] for m in listed]
        assert (await api.client.delete(one, headers=auth)).status_code == 204
        assert (await api.client.get(one, headers=auth)).status_code == 404


async def test_search_takes_the_filters_of_truemem_search(store_url: str) -> None:
    """``POST /v1/search`` takes ``SearchFilters``, time travel too (it refused ``as_of``
    and ``valid_at`` as unknown fields): a superseded fact is found as of before."""
    async with open_api(store_url) as api:
        auth = await api.key()

        async def add(text: str) -> None:
            added = await api.client.post(f"{ANA}/memories", headers=auth, json={"text": text})
            assert added.status_code == 201, added.text

        await add("Lives in Madrid")
        before = datetime.now(UTC)
        await add("Lives in Berlin")  # supersedes Madrid, now
        found = {}
        for when in ({}, {"as_of": before.isoformat()}, {"valid_at": before.isoformat()}):
            answer = await api.client.post("/v1/search", headers=auth, json={
                "user_id": "ana", "query": "Madrid", "mode": "keyword", **when})
            assert answer.status_code == 200, answer.text
            found[next(iter(when), "now")] = [hit["memory"]["text"] for hit in answer.json()]
        assert found == {"now": [], "as_of": ["Lives in Madrid"], "valid_at": ["Lives in Madrid"]}


async def test_sessions_and_users(store_url: str) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        await api.client.post("/v1/record", headers=auth, json={
            "user_id": "ana", "session_id": "s1", "user_message": "I sail on weekends.",
            "assistant_message": "Nice."})
        await api.client.post(f"{ANA}/memories", headers=auth, json={"text": "Owns a ketch"})
        await api.memory.adrain()
        session = (await api.client.get(f"{ANA}/sessions/s1", headers=auth)).json()
        assert session["user_id"] == "ana"
        assert [m["role"] for m in session["recent"]] == ["user", "assistant"]
        last = (await api.client.get(f"{ANA}/sessions/s1?recent=1", headers=auth)).json()
        assert [m["role"] for m in last["recent"]] == ["assistant"]
        listed = (await api.client.get(f"{ANA}/sessions", headers=auth)).json()
        assert [(s["session_id"], s["messages"]) for s in listed] == [("s1", 2)]
        assert listed[0]["last_at"] == session["recent"][-1]["created_at"]
        other = await api.key("globex")  # the same user id in another tenant: nothing
        assert (await api.client.get(f"{ANA}/sessions", headers=other)).json() == []
        bad = await api.client.get(f"{ANA}/sessions/s1?recent=0", headers=auth)
        assert bad.status_code == 422

        export = (await api.client.get(f"{ANA}/export", headers=auth)).json()
        assert export["user_id"] == "ana"
        assert {m["user_id"] for m in export["memories"]} == {"ana"}
        assert "acme" not in str(export)
        imported = await api.client.post("/v1/users/ben/import", headers=auth, json=export)
        assert imported.status_code == 201, imported.text
        assert "Owns a ketch" in [m["text"] for m in imported.json()]
        assert {m["user_id"] for m in imported.json()} == {"ben"}

        cleared = await api.client.delete(f"{ANA}/sessions/s1", headers=auth)
        assert cleared.status_code == 204
        for method in ("GET", "DELETE"):  # cleared, or never recorded: no such session
            for session in ("s1", "no-such"):
                gone = await api.client.request(method, f"{ANA}/sessions/{session}",
                                                headers=auth)
                assert gone.status_code == 404, gone.text
                assert gone.json()["error"]["type"] == "NotFoundError"
        erased = await api.client.delete(ANA, headers=auth)
        assert erased.status_code == 200
        assert erased.json()["user_id"] == "ana" and erased.json()["memories_removed"] >= 1
        assert (await api.client.get(f"{ANA}/memories", headers=auth)).json() == []
        assert rows_of(store_url, "acme/ana")["memories"] == []


async def test_tenants_share_no_user(store_url: str) -> None:
    async with open_api(store_url) as api:
        acme, globex = await api.key("acme"), await api.key("globex")
        mine = await api.client.post(f"{ANA}/memories", headers=acme,
                                     json={"text": "Works at Acme on rockets"})
        theirs = await api.client.post(f"{ANA}/memories", headers=globex,
                                       json={"text": "Works at Globex on magnets"})
        assert mine.json()["user_id"] == theirs.json()["user_id"] == "ana"
        listed = (await api.client.get(f"{ANA}/memories", headers=globex)).json()
        assert [m["text"] for m in listed] == ["Works at Globex on magnets"]
        hits = (await api.client.post("/v1/search", headers=globex, json={
            "user_id": "ana", "query": "rockets Acme"})).json()
        assert "rockets" not in str(hits)
        other = f"{ANA}/memories/{mine.json()['id']}"
        for method in ("GET", "DELETE"):
            answer = await api.client.request(method, other, headers=globex)
            assert answer.status_code == 404
            assert "acme" not in answer.text
        assert {row[1] for row in rows_of(store_url)["memories"]} == {"acme/ana", "globex/ana"}


async def test_a_per_user_key_acts_on_its_user_only(store_url: str) -> None:
    async with open_api(store_url) as api:
        ana = await api.key(user="ana")
        assert (await api.client.get(f"{ANA}/memories", headers=ana)).status_code == 200
        refused = await api.client.get("/v1/users/bob/memories", headers=ana)
        assert refused.status_code == 403
        assert refused.json()["error"]["type"] == "PermissionDeniedError"


async def test_a_key_revoked_elsewhere_stops_within_the_cache_time(store_url: str) -> None:
    async with open_api(store_url, ServerSettings(key_cache_seconds=0.3)) as api:
        auth = await api.key()
        assert (await api.client.get(f"{ANA}/memories", headers=auth)).status_code == 200
        other = KeyStore(store_url)  # as `truemem keys revoke` in another process
        try:
            await other.revoke(auth["Authorization"].removeprefix("Bearer "))
        finally:
            await other.close()
        await asyncio.sleep(0.4)
        assert (await api.client.get(f"{ANA}/memories", headers=auth)).status_code == 401
        again = await api.key()
        await api.client.get(f"{ANA}/memories", headers=again)
        await api.keys.revoke(again["Authorization"].removeprefix("Bearer "))  # this store:
        assert (await api.client.get(f"{ANA}/memories", headers=again)).status_code == 401


@pytest.mark.parametrize(("body", "where"), [
    ({"user_id": "ana", "session_id": "s", "message": 5}, "message"),
    ({"user_id": "ana", "session_id": "s"}, "message"),
    ({"user_id": "ana", "session_id": "s", "message": "hi", "extra": 1}, "extra"),
    ({"user_id": "a/b", "session_id": "s", "message": "hi"}, "user_id"),
    ({"user_id": "ana", "session_id": "s", "message": "   "}, "empty"),
    ({"user_id": "ana", "session_id": "s", "message": "x" * 100_001}, "100000"),
])
async def test_bad_input_is_a_typed_422(store_url: str, body: dict[str, Any], where: str
                                        ) -> None:
    async with open_api(store_url) as api:
        answer = await api.client.post("/v1/context", json=body, headers=await api.key())
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["type"] == "InvalidInputError"
        assert where in error["message"]
        assert rows_of(store_url)["messages"] == []


async def test_bodies_over_the_limit_are_refused_unread(store_url: str) -> None:
    settings = ServerSettings(max_body_bytes=1000, max_import_bytes=5000)
    async with open_api(store_url, settings) as api:
        auth = await api.key()
        big = {"user_id": "ana", "session_id": "s", "message": "x" * 2000}
        answer = await api.client.post("/v1/context", json=big, headers=auth)
        assert answer.status_code == 413
        assert answer.json()["error"]["type"] == "PayloadTooLargeError"

        async def chunks() -> Any:  # no Content-Length: counted as it arrives
            for _ in range(20):
                yield b" " * 100

        streamed = await api.client.post("/v1/context", content=chunks(),
                                         headers={**auth, "Content-Type": "application/json"})
        assert streamed.status_code == 413
        small_import = await api.client.post(
            "/v1/users/ana/import", headers=auth,
            json={"format": "truemem.user/1", "memories": [], "user_id": "x" * 2000})
        assert small_import.status_code == 201, small_import.text


async def test_readiness_says_what_the_database_refused(postgres_url: str) -> None:
    missing = make_url(postgres_url).set(database="truemem_no_such_database")
    async with open_api(missing.render_as_string(hide_password=False)) as api:
        answer = await api.client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["checks"] == {"database": "the database the URL names does not exist"}


async def test_no_stack_trace_or_sql_in_any_response(
        store_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()

        async def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("SELECT password FROM secrets WHERE user = 'acme/ana'")

        async def down(*args: object, **kwargs: object) -> None:
            raise StorageError("database error: the database is unreachable")

        monkeypatch.setattr(api.memory, "aget_memory", broken)
        answer = await api.client.get(f"{ANA}/memories/x", headers=auth)
        assert answer.status_code == 500
        assert answer.json() == {"error": {
            "type": "InternalError", "message": "internal error; the server log has the details"}}
        assert "SELECT" in caplog.text  # the log has it, the response does not
        monkeypatch.setattr(api.memory, "alist_memories", down)
        answer = await api.client.get(f"{ANA}/memories", headers=auth)
        assert answer.status_code == 503
        assert answer.json()["error"]["type"] == "StorageError"
        for path in ("/v1/nowhere", f"{ANA}/memories/x/nothing"):
            missing = await api.client.get(path, headers=auth)
            assert missing.status_code == 404
            assert missing.json()["error"]["type"] == "NotFoundError"
        wrong = await api.client.put(f"{ANA}/memories", headers=auth)
        assert wrong.status_code == 405
        assert wrong.json()["error"]["type"] == "MethodNotAllowedError"


async def test_health_readiness_and_the_docs(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0008")
    async with open_api(tmp_url) as api:  # a store one migration behind: readyz upgrades it
        assert (await api.client.get("/healthz")).json() == {"status": "ok"}
        ready = await api.client.get("/readyz")
        assert ready.json() == {"status": "ready", "checks": {"database": "ok"}}
        assert await current(tmp_url) == head()
        await migrate(tmp_url, "downgrade", "0008")  # behind the running server's back
        behind = await api.client.get("/readyz")
        assert behind.status_code == 503
        assert behind.json() == {"status": "unavailable",
                                 "checks": {"database": f"schema at 0008, expected {head()}"}}
        await migrate(tmp_url, "upgrade", "head")
        schema = (await api.client.get("/openapi.json")).json()
        assert "/v1/context" in schema["paths"]
    async with open_api(tmp_url, ServerSettings(redis_url="redis://127.0.0.1:1/0")) as api:
        answer = await api.client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["checks"] == {"database": "ok", "broker": "unreachable"
                                           " (ConnectionError)"}


def test_errors_have_one_shape_in_the_schema() -> None:
    from truemem_server.app import create_app

    schema = create_app().openapi()
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")) and path.startswith("/v1"):
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorBody"), (path, status)
