"""Requests the API cannot honour, answered as the errors table says (422, 415, 405) and
never as 500 or a "retry" 503; each writes nothing. Ids a URL cannot carry safely."""

from __future__ import annotations

from typing import Any

import pytest
from api_client import open_api, rows_of

ANA = "/v1/users/ana"
SAID = {"user_id": "ana", "session_id": "s1", "user_message": "I live in Lisbon.",
        "assistant_message": "Noted."}


async def _export(api: Any, auth: dict[str, str]) -> dict[str, Any]:
    assert (await api.client.post("/v1/record", json=SAID, headers=auth)).status_code == 201
    await api.memory.adrain()
    exported = await api.client.get(f"{ANA}/export", headers=auth)
    assert exported.json()["memories"], exported.text
    return exported.json()  # type: ignore[no-any-return]


def _changed(document: dict[str, Any], change: Any) -> dict[str, Any]:
    bad = {**document, "memories": [dict(m) for m in document["memories"]]}
    change(bad)
    return bad


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d["memories"][0].update(reinforcements=10**30), "reinforcements"),
    (lambda d: d["memories"][0].update(reinforcements=-5), "reinforcements"),
    (lambda d: d["memories"][0].update(created_at="0001-01-01T00:00:00+14:00"), "out of range"),
    (lambda d: d["memories"].append(d["memories"][0]), "same id"),
    (lambda d: d["memories"][0].update(history=[
        {"action": "bogus", "created_at": "2024-01-01T00:00:00+00:00"}]), "history action"),
    (lambda d: d["memories"][0].update(history=[
        {"action": "added", "created_at": "2024-01-01T00:00:00+00:00",
         "old_importance": "abc"}]), "importance"),
    (lambda d: d["memories"][0].pop("created_at"), "it has no 'created_at'"),
    (lambda d: d.update(sessions={"a": 1}), "wrong type"),
    (lambda d: d.update(graph=[1, 2]), "wrong type"),
    (lambda d: d.update(unknown_field=1), "unknown fields: unknown_field"),
])
async def test_a_bad_export_document_is_422_in_the_documents_words(
    store_url: str, change: Any, words: str
) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        document = await _export(api, auth)
        before = rows_of(store_url)
        answer = await api.client.post("/v1/users/ben/import", headers=auth,
                                       json=_changed(document, change))
        assert answer.status_code == 422, answer.text
        message = answer.json()["error"]["message"]
        assert words in message
        assert not any(name in message for name in ("Error(", "Error:", "Traceback"))
        assert rows_of(store_url) == before


@pytest.mark.parametrize("field", ["created_after", "created_before"])
async def test_a_search_time_without_a_utc_equivalent_is_422(store_url: str, field: str) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        instant = ("0001-01-01T00:00:00+14:00" if field == "created_after"
                   else "9999-12-31T23:59:59-05:00")
        answer = await api.client.post("/v1/search", headers=auth, json={
            "user_id": "ana", "query": "peanuts", field: instant})
        assert answer.status_code == 422, answer.text
        assert "out of range" in answer.json()["error"]["message"]


async def test_dot_segments_are_no_session_and_a_slash_is_reachable(store_url: str) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        for session in (".", ".."):
            refused = await api.client.post("/v1/record", headers=auth,
                                            json={**SAID, "session_id": session})
            assert refused.status_code == 422, refused.text
        assert (await api.client.post("/v1/record", json=SAID, headers=auth)).status_code == 201
        slashed = {**SAID, "session_id": "team/42", "user_message": "Hello from the team"}
        assert (await api.client.post("/v1/record", json=slashed, headers=auth)
                ).status_code == 201
        for path in (f"{ANA}/sessions/team/42", f"{ANA}/sessions/team%2F42"):
            state = await api.client.get(path, headers=auth)
            assert state.status_code == 200, state.text
            assert state.json()["recent"][0]["content"] == "Hello from the team"
        assert (await api.client.delete(f"{ANA}/sessions/team/42", headers=auth)
                ).status_code == 204
        assert (await api.client.get(f"{ANA}/sessions/team/42", headers=auth)
                ).status_code == 404
        kept = (await api.client.get(f"{ANA}/sessions/s1", headers=auth)).json()
        assert [m["content"] for m in kept["recent"]] == ["I live in Lisbon.", "Noted."]


async def test_bodies_and_paths_the_api_cannot_read(store_url: str) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        before = rows_of(store_url)
        as_text = await api.client.post(
            f"{ANA}/memories", content=b'{"text": "Lives in Lisbon"}',
            headers={**auth, "Content-Type": "text/plain"})
        assert as_text.status_code == 415, as_text.text
        assert as_text.json()["error"]["type"] == "UnsupportedMediaTypeError"
        not_utf8 = await api.client.post(
            f"{ANA}/memories", content=b'\xff\xfe{"text": "x"}',
            headers={**auth, "Content-Type": "application/json"})
        assert not_utf8.status_code == 422, not_utf8.text
        for user in ("%FE", "%FF"):  # both would read as U+FFFD: one user
            answer = await api.client.post(f"/v1/users/{user}/memories", headers=auth,
                                           json={"text": "Lives in Lisbon"})
            assert answer.status_code == 422, answer.text
        for importance in ("3", True):
            coerced = await api.client.post(f"{ANA}/memories", headers=auth, json={
                "text": "Lives in Lisbon", "importance": importance})
            assert coerced.status_code == 422, coerced.text
        assert rows_of(store_url) == before


async def test_the_stateless_mcp_endpoint_opens_no_stream(store_url: str) -> None:
    async with open_api(store_url) as api:
        auth = {**await api.key(), "X-TrueMem-User": "ana"}
        for method in ("GET", "DELETE"):
            answer = await api.client.request(method, "/mcp", headers=auth)
            assert answer.status_code == 405, answer.text
            assert answer.headers["allow"] == "POST"
