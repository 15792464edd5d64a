"""The inspector's rules over HTTP, on both backends: the cookie, the origin check, scopes,
escaping, the tenant's user list. (tests/server/test_ui_browser.py drives it in Chromium.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from api_client import Api, open_api

from truemem_core import InvalidInputError
from truemem_server.ui.users import tenant_users

ORIGIN = {"Origin": "http://truemem.test"}


@pytest.fixture
async def api(store_url: str) -> AsyncIterator[Api]:
    async with open_api(store_url) as opened:
        yield opened


async def signed_in(api: Api, **scope: object) -> httpx.AsyncClient:
    """The API's client with a new key of ``acme`` in the inspector's cookie."""
    key = (await api.key("acme", **scope))["Authorization"].removeprefix("Bearer ")  # type: ignore[arg-type]
    response = await api.client.post("/ui/login", data={"key": key}, headers=ORIGIN)
    assert response.status_code == 303, response.text
    return api.client


async def test_the_key_cookie_is_http_only_strict_and_kept_to_the_pages(api: Api) -> None:
    key = (await api.key("acme"))["Authorization"].removeprefix("Bearer ")
    response = await api.client.post("/ui/login", data={"key": key}, headers=ORIGIN)
    assert response.headers["location"] == "/ui/"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    page = await api.client.get("/ui/")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert key not in page.text


async def test_pages_without_a_key_lead_to_the_sign_in_form(api: Api) -> None:
    for path in ("/ui/", "/ui/users/ana", "/ui/users/ana/export"):
        response = await api.client.get(path)
        assert (response.status_code, response.headers["location"]) == (303, "/ui/login")
    wrong = await api.client.post("/ui/login", data={"key": "tm_nope"}, headers=ORIGIN)
    assert wrong.status_code == 401
    assert "unknown or revoked" in wrong.text


@pytest.mark.parametrize("headers", [
    {}, {"Origin": "http://evil.test"}, {"Origin": "null"},
    {"Referer": "http://evil.test/ui/users/ana"},
], ids=["none", "other-origin", "null-origin", "other-referer"])
async def test_a_form_from_elsewhere_is_refused(api: Api, headers: dict[str, str]) -> None:
    client = await signed_in(api)
    added = await api.memory.aadd_memory("acme/ana", "Lives in Porto")
    forms = [(f"/ui/users/ana/memories/{added.id}", {"text": "x", "importance": "1"}),
             (f"/ui/users/ana/memories/{added.id}/delete", {}),
             ("/ui/users/ana/erase", {"typed": "ana"}), ("/ui/logout", {})]
    for path, data in forms:
        response = await client.post(path, data=data, headers=headers)
        assert response.status_code == 403, path
        assert "inspector&#39;s own pages" in response.text
    assert [m.text for m in await api.memory.alist_memories("acme/ana")] == ["Lives in Porto"]
    same = await client.post(f"/ui/users/ana/memories/{added.id}/delete",
                             headers={"Referer": "http://truemem.test/ui/users/ana"})
    assert same.status_code == 303
    assert await api.memory.alist_memories("acme/ana") == []


async def test_everything_shown_is_escaped(api: Api) -> None:
    client = await signed_in(api)
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    await api.memory.aadd_memory("acme/ana", f"Wrote {hostile} in a form")
    await api.memory.aadd_memory(f"acme/{hostile[:20]}", "A user with a hostile id")
    pages = [await client.get("/ui/users/ana"), await client.get("/ui/users/ana",
                                                                  params={"q": hostile}),
             await client.get("/ui/")]
    for page in pages:
        assert page.status_code == 200
        assert "<script>" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in pages[0].text


async def test_a_per_user_key_sees_its_user_only_and_ids_stay_in_the_tenant(api: Api) -> None:
    mine = await api.memory.aadd_memory("acme/ana", "Likes jazz")
    theirs = await api.memory.aadd_memory("beta/ana", "Likes metal")
    client = await signed_in(api, user="ana")
    home = await client.get("/ui/")
    assert (home.status_code, home.headers["location"]) == (303, "/ui/users/ana")
    assert "Likes jazz" in (await client.get("/ui/users/ana")).text
    for path in ("/ui/users/bob", "/ui/users/bob/export", "/ui/open?user=bob"):
        response = await client.get(path)
        assert response.status_code == 403, path
    other = await client.get(f"/ui/users/ana/memories/{theirs.id}")
    assert other.status_code == 404
    assert "Likes metal" not in other.text
    page = await client.get(f"/ui/users/ana/memories/{mine.id}")
    assert page.status_code == 200 and "Likes jazz" in page.text
    exported = await client.get("/ui/users/ana/export")
    assert exported.headers["content-disposition"] == (
        'attachment; filename="ana.json"; filename*=UTF-8\'\'ana.json')
    assert "acme/" not in exported.text and "Likes jazz" in exported.text


async def test_a_read_only_key_looks_and_cannot_change(api: Api) -> None:
    added = await api.memory.aadd_memory("acme/ana", "Likes jazz")
    client = await signed_in(api, read_only=True)
    page = await client.get(f"/ui/users/ana/memories/{added.id}")
    assert page.status_code == 200 and "Save" not in page.text
    edit = await client.post(f"/ui/users/ana/memories/{added.id}",
                             data={"text": "Hates jazz", "importance": "1"}, headers=ORIGIN)
    erase = await client.post("/ui/users/ana/erase", data={"typed": "ana"}, headers=ORIGIN)
    assert (edit.status_code, erase.status_code) == (403, 403)
    for form in (f"/ui/users/ana/memories/{added.id}/delete", "/ui/users/ana/erase"):
        shown = await client.get(form)  # typed in: no form that changes anything either
        assert shown.status_code == 403 and "<form" not in shown.text.split("</header>")[-1]
    assert [m.text for m in await api.memory.alist_memories("acme/ana")] == ["Likes jazz"]


async def test_a_user_named_in_any_script_downloads_their_export(api: Api) -> None:
    await api.memory.aadd_memory("acme/Łukasz 日本", "Likes pierogi")
    client = await signed_in(api)
    exported = await client.get("/ui/users/%C5%81ukasz%20%E6%97%A5%E6%9C%AC/export")
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-disposition"] == (
        "attachment; filename=\"_ukasz___.json\"; "
        "filename*=UTF-8''%C5%81ukasz%20%E6%97%A5%E6%9C%AC.json")
    assert "Likes pierogi" in exported.text


async def test_dot_segments_are_no_user(api: Api) -> None:
    auth = await api.key("acme")
    for user in (".", ".."):
        answer = await api.client.post("/v1/record", headers=auth, json={
            "user_id": user, "session_id": "s", "user_message": "Hi", "assistant_message": "Hello"})
        assert answer.status_code == 422, answer.text
        with pytest.raises(InvalidInputError, match="cannot be"):
            await api.keys.create("acme", user=user)


async def test_bad_forms_are_pages_not_traces(api: Api) -> None:
    added = await api.memory.aadd_memory("acme/ana", "Likes jazz")
    client = await signed_in(api)
    for data in ({"text": "x", "importance": "9"}, {"text": "   ", "importance": "3"},
                 {"importance": "3"}):
        response = await client.post(f"/ui/users/ana/memories/{added.id}", data=data,
                                     headers=ORIGIN)
        assert response.status_code == 422, data
        assert response.headers["content-type"].startswith("text/html")
        assert "Traceback" not in response.text
    missing = await client.get("/ui/users/ana/memories/nope")
    assert missing.status_code == 404 and "no such memory" in missing.text
    bad_user = await client.get("/ui/open", params={"user": "a\x00b"})
    assert bad_user.status_code == 422


async def test_the_user_list_keeps_to_the_tenant(api: Api) -> None:
    for user in ("acme/ana", "acme/bob", "acme/bo", "acme-eu/eve", "acme2/zed", "acm/x",
                 "acme_/y", "beta/ana"):
        await api.memory.aadd_memory(user, f"A fact of {user}")
    await api.memory.arecord("acme/carl", "s1", "Hello there", "Hi!")
    listed = await tenant_users(api.memory, "acme")
    assert [(u.user, u.memories, u.sessions) for u in listed] == [
        ("ana", 1, 0), ("bo", 1, 0), ("bob", 1, 0), ("carl", 0, 1)]
    assert [u.user for u in await tenant_users(api.memory, "acme", "bo")] == ["bo", "bob"]
    assert [u.user for u in await tenant_users(api.memory, "acme", "b%")] == []
    assert [u.user for u in await tenant_users(api.memory, "beta")] == ["ana"]
    client = await signed_in(api)
    page = await client.get("/ui/", params={"find": "bo"})
    assert "bob" in page.text and "carl" not in page.text and "eve" not in page.text


async def test_look_alike_users_are_marked_in_the_user_list(api: Api) -> None:
    """"ana" and "аna" (a Cyrillic "а") are two users that read the same: the list says
    which one mixes scripts, so the operator does not erase the wrong one."""
    for user in ("acme/ana", "acme/\u0430na", "acme/Łukasz 日本", "acme/Ελένη"):
        await api.memory.aadd_memory(user, "A fact")
    listed = {u.user: u.warning for u in await tenant_users(api.memory, "acme")}
    assert listed["ana"] is None and listed["Łukasz 日本"] is None and listed["Ελένη"] is None
    assert "Cyrillic and Latin" in listed["\u0430na"]  # type: ignore[operator]
    client = await signed_in(api)
    page = (await client.get("/ui/")).text
    assert page.count('class="lookalike"') == 1
    row = page[page.index("/users/%D0%B0na"):]
    assert row.index('class="lookalike" title="Look-alike id: mixes Cyrillic and Latin') < (
        row.index("</tr>"))


async def test_user_ids_are_one_form_and_never_padded(api: Api) -> None:
    auth = await api.key("acme")
    answer = await api.client.post("/v1/users/Jose%CC%81/memories", headers=auth,
                                   json={"text": "Likes fado"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["user_id"] == "Jos\u00e9"
    listed = await api.client.get("/v1/users/Jos%C3%A9/memories", headers=auth)
    assert [m["text"] for m in listed.json()] == ["Likes fado"]
    for user in ("ana ", " ana"):
        refused = await api.client.post("/v1/record", headers=auth, json={
            "user_id": user, "session_id": "s", "user_message": "Hi", "assistant_message": "Hi"})
        assert refused.status_code == 422 and "space" in refused.text, refused.text
        with pytest.raises(InvalidInputError, match="space at its start or end"):
            await api.keys.create("acme", user=user)
    one, secret = await api.keys.create("acme", user="Jose\u0301")
    assert one.user == "Jos\u00e9"
    mine = await api.client.get("/v1/users/Jose%CC%81/memories",
                                headers={"Authorization": f"Bearer {secret}"})
    assert [m["text"] for m in mine.json()] == ["Likes fado"]
    assert await api.memory.alist_memories("acme/ana") == []
    assert await api.memory.alist_memories("acme/Jose\u0301") != []


async def test_archived_memories_show_what_superseded_them(api: Api) -> None:
    await api.memory.aadd_memory("acme/ana", "Lives in Porto")
    newer = await api.memory.aadd_memory("acme/ana", "Lives in Lisbon")
    client = await signed_in(api)
    current = await client.get("/ui/users/ana")
    assert "Lives in Lisbon" in current.text and "Lives in Porto" not in current.text
    everything = await client.get("/ui/users/ana", params={"archived": "true"})
    assert "Lives in Porto" in everything.text and "archived" in everything.text
    assert f'href="/ui/users/ana/memories/{newer.id}">superseded</a>' in everything.text


async def test_conversations_are_shown_escaped_kept_to_their_user_and_forgotten_on_request(
    api: Api
) -> None:
    hostile = '<script>alert("x")</script>'
    await api.memory.arecord("acme/ana", "trip/2024 <b>", f"I said {hostile}", "Noted.")
    await api.memory.arecord("beta/ana", "trip/2024 <b>", "Another tenant's Ana", "Hi.")
    await api.memory.aadd_memory("acme/ana", "Lives in Porto")
    client = await signed_in(api)
    listed = await client.get("/ui/users/ana/sessions")
    assert listed.status_code == 200
    assert "trip/2024 &lt;b&gt;" in listed.text and "<b>" not in listed.text
    assert "/ui/users/ana/conversation?id=trip%2F2024%20%3Cb%3E" in listed.text
    shown = await client.get("/ui/users/ana/conversation", params={"id": "trip/2024 <b>"})
    assert shown.status_code == 200
    assert "&lt;script&gt;" in shown.text and "<script>" not in shown.text
    assert "Another tenant" not in shown.text and "Forget this conversation" in shown.text
    elsewhere = await client.post("/ui/users/ana/conversation/forget",
                                  data={"id": "trip/2024 <b>"},
                                  headers={"Origin": "http://evil.test"})
    assert elsewhere.status_code == 403

    reader = await signed_in(api, read_only=True)  # the same client, another key's cookie
    looked = await reader.get("/ui/users/ana/conversation", params={"id": "trip/2024 <b>"})
    assert looked.status_code == 200 and "Forget this conversation" not in looked.text
    confirm = await reader.get("/ui/users/ana/conversation/forget",
                               params={"id": "trip/2024 <b>"})
    refused = await reader.post("/ui/users/ana/conversation/forget",
                                data={"id": "trip/2024 <b>"}, headers=ORIGIN)
    assert (confirm.status_code, refused.status_code) == (403, 403)
    bob = await signed_in(api, user="bob")
    assert (await bob.get("/ui/users/ana/sessions")).status_code == 403
    assert len(await api.memory.sessions.alist("acme/ana")) == 1

    client = await signed_in(api)
    forgotten = await client.post("/ui/users/ana/conversation/forget",
                                  data={"id": "trip/2024 <b>"}, headers=ORIGIN)
    assert (forgotten.status_code, forgotten.headers["location"]) == (
        303, "/ui/users/ana/sessions?done=forgotten")
    assert await api.memory.sessions.alist("acme/ana") == []
    assert len(await api.memory.sessions.alist("beta/ana")) == 1  # another tenant's stays
    assert [m.text for m in await api.memory.alist_memories("acme/ana")] == ["Lives in Porto"]
    missing = await client.get("/ui/users/ana/conversation")
    assert missing.status_code == 422 and "Traceback" not in missing.text


async def test_a_conversation_that_is_not_there_is_a_404_page_and_one_of_a_summary_forgettable(
    api: Api
) -> None:
    client = await signed_in(api)
    for sid in ("never-existed", "trip/2024"):
        view = await client.get("/ui/users/ana/conversation", params={"id": sid})
        confirm = await client.get("/ui/users/ana/conversation/forget", params={"id": sid})
        forget = await client.post("/ui/users/ana/conversation/forget", data={"id": sid},
                                   headers=ORIGIN)
        assert (view.status_code, confirm.status_code, forget.status_code) == (404, 404, 404)
        assert "no such conversation for this user" in view.text
    for sid in (".", " ", "a\x00b"):
        confirm = await client.get("/ui/users/ana/conversation/forget", params={"id": sid})
        assert confirm.status_code == 422 and "<form" not in confirm.text.split("</header>")[-1]
    exported = await api.memory.aexport_user("acme/ana")
    exported["sessions"] = [{"session_id": "only-summary", "summary": "We talked about Kyoto.",
                             "created_at": "2024-01-01T00:00:00+00:00", "messages": []}]
    await api.memory.aimport_user("acme/ana", exported)
    shown = await client.get("/ui/users/ana/conversation", params={"id": "only-summary"})
    assert shown.status_code == 200
    assert "We talked about Kyoto." in shown.text and "Forget this conversation" in shown.text
    forget = await client.post("/ui/users/ana/conversation/forget",
                               data={"id": "only-summary"}, headers=ORIGIN)
    assert forget.status_code == 303 and await api.memory.sessions.alist("acme/ana") == []
