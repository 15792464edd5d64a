"""Every route against every kind of wrong key: the right status, and nothing read or changed.

The cases, for each route of ``/v1``: no key and a revoked key (401); another
user's per-user key (403); a read-only key on a write (403); a key of another
tenant (its own, empty user "ana": nothing of acme's is read or changed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from api_client import Api, open_api, rows_of

SECRET = "Keeps the launch codes under the blue vase"


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # a template: {memory} is ana's memory id
    body: dict[str, Any] | None
    writes: bool
    other_tenant: int  # the status for a key of another tenant

    def url(self, memory_id: str) -> str:
        return self.path.replace("{memory}", memory_id)


EXPORT = {"format": "truemem.user/1", "memories": [{"text": "Imported fact", "importance": 3,
                                                    "kind": "semantic", "source": "manual",
                                                    "state": "active",
                                                    "created_at": "2026-01-01T00:00:00+00:00",
                                                    "updated_at": "2026-01-01T00:00:00+00:00"}]}
ONE = "/v1/users/ana/memories/{memory}"
ROUTES = [
    Route("POST", "/v1/context", {"user_id": "ana", "session_id": "s1",
                                  "message": "Remember that I like tea. Where are the codes?"},
          True, 200),
    Route("POST", "/v1/record", {"user_id": "ana", "session_id": "s1", "user_message": "Hi",
                                 "assistant_message": "Hello"}, True, 201),
    Route("GET", "/v1/users/ana/memories", None, False, 200),
    Route("POST", "/v1/users/ana/memories", {"text": "Likes green tea"}, True, 201),
    Route("GET", ONE, None, False, 404),
    Route("PATCH", ONE, {"text": "Keeps nothing"}, True, 404),
    Route("DELETE", ONE, None, True, 404),
    Route("GET", f"{ONE}/history", None, False, 404),
    Route("POST", f"{ONE}/feedback", {"verdict": "wrong"}, True, 404),
    Route("POST", "/v1/search", {"user_id": "ana", "query": "launch codes vase"}, False, 200),
    Route("GET", "/v1/users/ana/export", None, False, 200),
    Route("POST", "/v1/users/ana/import", EXPORT, True, 201),
    Route("DELETE", "/v1/users/ana", None, True, 200),
    Route("GET", "/v1/users/ana/sessions", None, False, 200),
    Route("GET", "/v1/users/ana/syntheses", None, False, 200),
    Route("GET", "/v1/users/ana/sessions/s1", None, False, 404),  # globex's ana has none
    Route("DELETE", "/v1/users/ana/sessions/s1", None, True, 404),
]


def test_the_matrix_covers_every_route() -> None:
    from truemem_server.app import create_app

    served = {(method.upper(), path) for path, operations in create_app().openapi()["paths"].items()
              if path.startswith("/v1") for method in operations}
    listed = {(r.method, r.path.replace("/ana", "/{user_id}").replace("{memory}", "{memory_id}")
               .replace("/s1", "/{session_id}")) for r in ROUTES}
    assert served == listed


async def _setup(api: Api) -> tuple[str, dict[str, str]]:
    """Ana of acme with a memory, a session and its messages; the keys of each case."""
    owner = await api.key("acme")
    made = await api.client.post("/v1/users/ana/memories", headers=owner,
                                 json={"text": SECRET, "importance": 5})
    await api.client.post("/v1/record", headers=owner, json={
        "user_id": "ana", "session_id": "s1", "user_message": f"Note: {SECRET}",
        "assistant_message": "Noted."})
    await api.memory.adrain()
    revoked, key = await api.keys.create("acme")
    await api.keys.revoke(revoked.id)
    cases = {"revoked": f"Bearer {key}", "none": "",
             "malformed": "Bearer tm_0123456789abcdef_" + "x" * 43,
             "other user": (await api.key("acme", user="bob"))["Authorization"],
             "read-only": (await api.key("acme", read_only=True))["Authorization"],
             "other tenant": (await api.key("globex"))["Authorization"]}
    return made.json()["id"], cases


def _expected(case: str, route: Route) -> int | None:
    """The status a case must get on a route (None: the case does not apply)."""
    if case in ("none", "revoked", "malformed"):
        return 401
    if case == "other user":
        return 403
    if case == "read-only":
        return 403 if route.writes else None
    return route.other_tenant


@pytest.mark.parametrize("case", ["none", "revoked", "malformed", "other user", "read-only",
                                  "other tenant"])
async def test_a_wrong_key_reads_and_changes_nothing(store_url: str, case: str) -> None:
    async with open_api(store_url) as api:
        memory_id, cases = await _setup(api)
        watched = "acme/ana" if case == "other tenant" else None  # globex may write its own
        before = rows_of(store_url, watched)
        checked = 0
        for route in ROUTES:
            status = _expected(case, route)
            if status is None:
                continue
            headers = {"Authorization": cases[case]} if cases[case] else {}
            answer = await api.client.request(route.method, route.url(memory_id),
                                              json=route.body, headers=headers)
            await api.memory.adrain()
            where = f"{case}: {route.method} {route.path}"
            assert answer.status_code == status, f"{where}: {answer.text}"
            assert SECRET not in answer.text and "vase" not in answer.text, where
            assert "acme" not in answer.text, where
            if status >= 400:
                assert set(answer.json()["error"]) == {"type", "message"}, where
            assert rows_of(store_url, watched) == before, where
            checked += 1
        assert checked >= 7


async def test_a_cookie_carries_the_key_too(store_url: str) -> None:
    async with open_api(store_url) as api:
        owner = await api.key("acme")
        secret = owner["Authorization"].removeprefix("Bearer ")
        api.client.cookies.set("truemem_key", secret)
        answer = await api.client.get("/v1/users/ana/memories")
        assert answer.status_code == 200
        api.client.cookies.set("truemem_key", "tm_nope")
        assert (await api.client.get("/v1/users/ana/memories")).status_code == 401
