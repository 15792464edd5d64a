"""The inspector's knowledge-graph pages over HTTP, on both backends: the entity list, an
entity's observations and relations with their time lines, its causes and effects, the
*as of* field, scopes and escaping. (test_ui_browser.py opens one in Chromium.)"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from api_client import Api, open_api
from test_ui import ORIGIN, signed_in

from truemem_core import EntitySpec, ObservationSpec, RelationSpec, TrueMem
from truemem_server.ui.graph import moment, row_state

ANA = "acme/ana"


@pytest.fixture
async def api(store_url: str) -> AsyncIterator[Api]:
    async with open_api(store_url) as opened:
        yield opened


async def instant() -> datetime:
    """A moment strictly between two writes."""
    await asyncio.sleep(0.02)
    now = datetime.now(UTC)
    await asyncio.sleep(0.02)
    return now


async def seed(memory: TrueMem) -> dict[str, datetime]:
    """TrueMem the project: it used PostgreSQL 14, then migrated to 16; a disk that
    filled up caused an outage of it, a cheap VPS caused the full disk."""
    await memory.graph.aadd_entities(ANA, [EntitySpec("TrueMem", "project", ("tm",))])
    await memory.graph.aadd_observations(ANA, [
        ObservationSpec("TrueMem", "Stores long-term memories", entity_type="project"),
        ObservationSpec("TrueMem", "Runs in Lisbon", entity_type="project")])
    await memory.graph.aadd_relations(ANA, [
        RelationSpec("TrueMem", "uses", "PostgreSQL 14", target_type="tool")])
    before_migration = await instant()
    await memory.graph.aadd_relations(ANA, [
        RelationSpec("TrueMem", "uses", "PostgreSQL 16", target_type="tool",
                     replaces="PostgreSQL 14"),
        RelationSpec("Disk full", "caused", "Outage", evidence="Postgres stopped at 03:12"),
        RelationSpec("Outage", "blocked", "TrueMem", evidence="No writes for an hour"),
        RelationSpec("Cheap VPS", "caused", "Disk full", evidence="A 10 GB disk")])
    before_retraction = await instant()
    assert await memory.graph.adelete_observations(ANA, "TrueMem", ["Runs in Lisbon"]) == 1
    return {"before_migration": before_migration, "before_retraction": before_retraction}


def rows(html: str, table: str) -> list[str]:
    """The text of each row of ``table.<table>``, tags stripped, spaces collapsed."""
    body = html.split(f'class="list {table}', 1)[1].split("</table>", 1)[0]
    found = re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in found]


def section(html: str, name: str) -> str:
    return html.split(f'class="chain {name}"', 1)[1].split("</section>", 1)[0]


async def entity_url(memory: TrueMem, name: str) -> str:
    return f"/ui/users/ana/entities/{(await memory.graph.aget_entity(ANA, name)).id}"


async def test_an_entity_page_shows_its_time_lines_causes_and_effects(api: Api) -> None:
    times = await seed(api.memory)
    client = await signed_in(api)
    user = await client.get("/ui/users/ana")
    assert 'href="/ui/users/ana/entities">Knowledge graph</a>' in user.text
    listed = await client.get("/ui/users/ana/entities")
    assert listed.status_code == 200
    assert [row.split(" ")[0] for row in rows(listed.text, "entities")] == [
        "Cheap", "Disk", "Outage", "PostgreSQL", "PostgreSQL", "TrueMem"]
    assert "TrueMem project tm" in " ".join(rows(listed.text, "entities"))

    url = await entity_url(api.memory, "TrueMem")
    page = await client.get(url)
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert [r.split(" current")[0] for r in rows(page.text, "observations")] == [
        "Stores long-term memories"]
    relations = rows(page.text, "relations")
    assert sorted(r.split(" 20")[0] for r in relations) == [
        "Outage blocked TrueMem current", "TrueMem uses PostgreSQL 14 ended",
        "TrueMem uses PostgreSQL 16 current"]
    assert any("Outage blocked" in r and "No writes for an hour" in r for r in relations)
    outage = await entity_url(api.memory, "Outage")
    assert f'<a href="{outage}">Outage</a> <b class="rel">blocked</b>' in page.text
    causes = section(page.text, "causes")
    assert "A 10 GB disk" in causes and "Postgres stopped at 03:12" in causes
    assert causes.index("Outage") < causes.index("Disk full") < causes.index("Cheap VPS")
    assert "No known effect." in section(page.text, "effects")
    assert "No known cause." in section((await client.get(
        await entity_url(api.memory, "Cheap VPS"))).text, "causes")

    everything = await client.get(url, params={"retracted": "true"})
    retracted = [r for r in rows(everything.text, "observations") if "retracted" in r]
    assert [r.split(" retracted")[0] for r in retracted] == ["Runs in Lisbon"]
    assert len(rows(everything.text, "relations")) == 4  # the replaced version too

    then = await client.get(url, params={"as_of": times["before_migration"].isoformat()})
    assert [r.split(" 20")[0] for r in rows(then.text, "relations")] == [
        "TrueMem uses PostgreSQL 14 current"]
    assert sorted(r.split(" current")[0] for r in rows(then.text, "observations")) == [
        "Runs in Lisbon", "Stores long-term memories"]
    assert "No known cause." in section(then.text, "causes")
    assert f'value="{times["before_migration"].strftime("%Y-%m-%dT%H:%M:%S")}"' in then.text
    later = await client.get(url, params={"as_of": times["before_retraction"].isoformat()})
    assert "Runs in Lisbon" in later.text and "Postgres stopped" in later.text


async def test_an_entity_named_by_its_name_or_alias_redirects_to_its_id(api: Api) -> None:
    await seed(api.memory)
    client = await signed_in(api)
    for name in ("TrueMem", "tm"):
        found = await client.get(f"/ui/users/ana/entities/{name}")
        assert (found.status_code, found.headers["location"]) == (
            303, await entity_url(api.memory, "TrueMem"))
    old = await client.get("/ui/users/ana/entities/Outage", params={"as_of": "2020-01-01"})
    assert old.status_code == 404 and "no such entity for this user at that time" in old.text


async def test_the_entity_list_finds_by_words_type_and_instant(api: Api) -> None:
    times = await seed(api.memory)
    client = await signed_in(api)
    found = await client.get("/ui/users/ana/entities", params={"q": "postgres"})
    assert [r.split(" tool")[0] for r in rows(found.text, "entities")] == [
        "PostgreSQL 14", "PostgreSQL 16"]
    tools = await client.get("/ui/users/ana/entities", params={"type": "tool"})
    assert len(rows(tools.text, "entities")) == 2 and "of type tool" in tools.text
    early = await client.get("/ui/users/ana/entities",
                             params={"as_of": times["before_migration"].isoformat()})
    assert [r.split(" ")[0] for r in rows(early.text, "entities")] == ["PostgreSQL", "TrueMem"]
    empty = await client.get("/ui/users/bob/entities")
    assert empty.status_code == 200 and "No entity is known about bob" in empty.text


async def test_scopes_hold_and_another_users_entity_is_not_found(api: Api) -> None:
    await seed(api.memory)
    theirs = (await api.memory.graph.aadd_entities(
        "beta/ana", [EntitySpec("Secret", "project")]))[0]
    bobs = (await api.memory.graph.aadd_entities("acme/bob", [EntitySpec("Hidden", "project")]))[0]
    for path in ("/ui/users/ana/entities", await entity_url(api.memory, "TrueMem")):
        response = await api.client.get(path)
        assert (response.status_code, response.headers["location"]) == (303, "/ui/login")
    client = await signed_in(api, user="ana", read_only=True)
    assert (await client.get(await entity_url(api.memory, "TrueMem"))).status_code == 200
    for path, status in [(f"/ui/users/ana/entities/{theirs.id}", 404),
                         (f"/ui/users/ana/entities/{bobs.id}", 404),
                         ("/ui/users/ana/entities/Hidden", 404),
                         (f"/ui/users/bob/entities/{bobs.id}", 403),
                         ("/ui/users/bob/entities", 403)]:
        response = await client.get(path)
        assert response.status_code == status, path
        assert "Secret" not in response.text and "Hidden" not in response.text


async def test_names_and_evidence_are_escaped_and_bad_instants_are_pages(api: Api) -> None:
    hostile = '<script>alert("x")</script>'
    await api.memory.graph.aadd_relations(ANA, [RelationSpec(
        f"Bobby {hostile}", "caused", "Outage", evidence=f"said {hostile}")])
    await api.memory.graph.aadd_observations(ANA, [ObservationSpec("Outage", f"Was {hostile}")])
    client = await signed_in(api)
    pages = [await client.get("/ui/users/ana/entities"),
             await client.get(await entity_url(api.memory, "Outage"))]
    for page in pages:
        assert page.status_code == 200
        assert "<script>" not in page.text
    assert "said &lt;script&gt;" in pages[1].text
    for value in ("soon", "2026-13-45", "x" * 41):
        bad = await client.get("/ui/users/ana/entities", params={"as_of": value})
        assert bad.status_code == 422, value
        assert bad.headers["content-type"].startswith("text/html")
        assert "Traceback" not in bad.text


async def test_the_graph_pages_have_no_form_that_writes(api: Api) -> None:
    await seed(api.memory)
    client: httpx.AsyncClient = await signed_in(api)
    page = await client.get(await entity_url(api.memory, "TrueMem"))
    assert 'method="post"' not in page.text.split("<main>", 1)[1]
    posted = await client.post(await entity_url(api.memory, "TrueMem"), headers=ORIGIN)
    assert posted.status_code == 405


def test_a_rows_state_at_an_instant() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    day = timedelta(days=1)
    assert row_state(None, None, None, now) == "current"
    assert row_state(now - day, now + day, None, now) == "current"
    assert row_state(now - 2 * day, now - day, None, now) == "ended"
    assert row_state(now + day, None, None, now) == "not yet"
    assert row_state(None, now - day, now - day, now) == "retracted"
    assert row_state(None, None, now + day, now) == "current"  # retracted only later


def test_the_as_of_field_reads_dates_and_times_in_utc() -> None:
    assert moment("") is None and moment("  ") is None
    assert moment("2026-03-15") == datetime(2026, 3, 15, tzinfo=UTC)
    assert moment("2026-03-15T12:30") == datetime(2026, 3, 15, 12, 30, tzinfo=UTC)
    assert moment("2026-03-15T12:30+02:00") == datetime(2026, 3, 15, 10, 30, tzinfo=UTC)
