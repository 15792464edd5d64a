"""The web inspector in headless Chromium (Debian's package, driven by Playwright).

A real uvicorn serves the app on loopback; the browser signs in with a key, picks a
user, searches, edits, deletes, reads a memory's history and erases a user, and a
form posted from another origin is refused. Each main view is photographed: into
``docs/img/`` when ``TRUEMEM_SCREENSHOTS=1`` (how the docs' pictures are made), into
the test's temporary folder otherwise.

A missing browser is installed with apt-get when it can be; otherwise every test
here fails (never skips) with the command to run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from api_client import live_server as serve
from playwright.sync_api import Page, expect, sync_playwright

from truemem_core import EntitySpec, ObservationSpec, RelationSpec, TrueMem
from truemem_server.app import create_app
from truemem_server.keys import KeyStore
from truemem_server.message_ids import of_store

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAPTOP = {"width": 1280, "height": 800}
expect.set_options(timeout=15_000)
PHONE = {"width": 390, "height": 844}



@pytest.fixture
def backend() -> str:
    """SQLite only: what the pages do on each backend is tested in test_ui.py."""
    return "sqlite"


def _install_chromium() -> str | None:
    """``apt-get update && apt-get install -y chromium``: None when it worked, else why not."""
    if shutil.which("apt-get") is None:
        return "apt-get is not available"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
        if done.returncode != 0:
            return f"`{' '.join(command)}` failed: {(done.stderr or done.stdout).strip()[-800:]}"
    return None if CHROMIUM.exists() else f"the package installed no {CHROMIUM}"


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's chromium, installed now if it is missing; a clear failure if it cannot be."""
    if not CHROMIUM.exists():
        problem = _install_chromium()
        if problem is not None:
            pytest.fail(f"the browser tests need Debian's chromium at {CHROMIUM}, and "
                        f"installing it failed: {problem}\n"
                        "Install it (as root: apt-get update && apt-get install -y chromium) "
                        "and run the tests again.", pytrace=False)
    return CHROMIUM


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if os.environ.get("TRUEMEM_SCREENSHOTS") == "1":
        return ROOT / "docs" / "img"
    return tmp_path


@dataclass
class Site:
    url: str
    memory: TrueMem
    keys: dict[str, str]


def _keys(url: str) -> dict[str, str]:
    async def create() -> dict[str, str]:
        store = KeyStore(url)
        try:
            return {"acme": (await store.create("acme", name="support desk"))[1],
                    "ana": (await store.create("acme", user="ana"))[1],
                    "reader": (await store.create("acme", read_only=True))[1]}
        finally:
            await store.close()

    return asyncio.run(create())


def _seed(memory: TrueMem) -> None:
    memory.record("acme/ana", "s1", "I moved to Lisbon last month. I am vegetarian and I "
                  "work as a nurse.", "Welcome to Lisbon! Noted.")
    memory.drain()
    memory.add_memory("acme/ana", "Is allergic to peanuts", importance=5)
    memory.add_memory("acme/ana", "Renewed the SSL certificate with Certbot on the web server",
                      kind="episodic", importance=2)
    memory.add_memory("acme/bob", "Prefers answers in Spanish", importance=4)
    memory.add_memory("beta/carol", "A user of another tenant")


@pytest.fixture
def site(memory: TrueMem) -> Iterator[Site]:
    _seed(memory)
    keys = _keys(memory.admin.database_url)
    with serve(create_app(memory)) as base:
        yield Site(f"{base}/ui", memory, keys)


@pytest.fixture
def page(site: Site, chromium: Path) -> Iterator[Page]:
    """A laptop-sized tab of a fresh browser. Playwright's sync API runs an event loop in
    this thread while it is open, so it starts after ``site`` has made its keys."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
        try:
            tab = browser.new_context(viewport=LAPTOP).new_page()
            tab.set_default_timeout(30_000)  # a loaded CI machine: waits, not flakes
            yield tab
        finally:
            browser.close()


def sign_in(page: Page, site: Site, key: str) -> None:
    page.goto(f"{site.url}/")
    expect(page).to_have_url(f"{site.url}/login")
    page.get_by_label("API key").fill(site.keys[key])
    page.get_by_role("button", name="Sign in").click()


def test_sign_in_pick_a_user_and_search_with_reasons(page: Page, site: Site,
                                                     shots: Path) -> None:
    page.goto(f"{site.url}/login")
    page.screenshot(path=shots / "inspector-sign-in.png")
    page.get_by_label("API key").fill("tm_0123456789abcdef_" + "x" * 43)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unknown or revoked")

    sign_in(page, site, "acme")
    expect(page.get_by_role("heading", level=1)).to_have_text("Users of acme")
    users = page.locator("table.users tbody tr")
    expect(users).to_have_count(2)  # ana and bob; beta's carol is another tenant's
    expect(users.first).to_contain_text("ana")
    page.screenshot(path=shots / "inspector-users.png")

    page.get_by_role("link", name="ana", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("ana")
    rows = page.locator("table.memories tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text("Is allergic to peanuts")  # most important first
    with ThreadPoolExecutor(1) as aside:  # Playwright's loop runs in this thread
        ids = aside.submit(asyncio.run, of_store(site.memory.admin.database_url)).result()
    shown = ids.shown(1)  # the message stored first
    expect(page.locator("tr", has_text="Is vegetarian")).to_contain_text(
        f"from message #{shown}")
    expect(page.locator("tr", has_text="Is vegetarian")).to_contain_text("extracted")
    page.screenshot(path=shots / "inspector-memories.png", full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=shots / "inspector-memories-phone.png")
    page.set_viewport_size(LAPTOP)

    page.get_by_label("Search memories").fill("the SSL thing")
    page.get_by_role("button", name="Search").click()
    first = page.locator("li.hit").first
    expect(first).to_contain_text("Renewed the SSL certificate")
    expect(first.locator(".chip.keyword")).to_contain_text("words #1")
    expect(first.locator(".chip.trigram")).to_contain_text("spelling #1")
    expect(first.locator(".why-text")).to_contain_text("shares words")
    page.screenshot(path=shots / "inspector-search.png")


def test_edit_read_the_history_and_delete(page: Page, site: Site, shots: Path) -> None:
    sign_in(page, site, "acme")
    page.goto(f"{site.url}/users/ana")
    page.get_by_role("link", name="Works as a nurse").click()
    page.get_by_label("Text").fill("Works as a nurse at Santa Maria hospital")
    page.get_by_label("Importance").select_option("5")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "Works as a nurse at Santa Maria hospital")
    history = page.locator("table.history tbody tr")
    expect(history.first).to_contain_text("updated")
    expect(history.first.locator("del")).to_have_text("Works as a nurse")
    expect(history.first.locator("ins")).to_have_text("Works as a nurse at Santa Maria hospital")
    expect(history.first).to_contain_text("importance 4 → 5")
    expect(history.last).to_contain_text("added")
    page.screenshot(path=shots / "inspector-memory.png", full_page=True)

    page.get_by_role("link", name="Delete…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete this memory?")
    page.screenshot(path=shots / "inspector-delete.png")
    page.get_by_role("button", name="Delete the memory").click()
    expect(page.get_by_role("status")).to_have_text("Memory deleted.")
    expect(page.locator("table.memories")).not_to_contain_text("Santa Maria")
    assert "Santa Maria" not in str(site.memory.export_user("acme/ana"))


def test_read_a_conversation_and_forget_it(page: Page, site: Site, shots: Path) -> None:
    """What the user said, as they said it, and the conversation forgotten on request:
    its messages go, the memories extracted from it stay."""
    sign_in(page, site, "acme")
    page.goto(f"{site.url}/users/ana")
    page.get_by_role("link", name="Conversations").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Conversations")
    row = page.locator("table.sessions tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("2")
    row.get_by_role("link", name="s1").click()
    messages = page.locator("table.messages tbody tr")
    expect(messages).to_have_count(2)
    expect(messages.first).to_contain_text("I moved to Lisbon last month.")
    expect(messages.last).to_contain_text("Welcome to Lisbon! Noted.")
    page.screenshot(path=shots / "inspector-conversation.png", full_page=True)
    page.get_by_role("link", name="Forget this conversation…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forget this conversation?")
    page.get_by_role("button", name="Forget the conversation").click()
    expect(page.get_by_role("status")).to_have_text("Conversation forgotten.")
    expect(page.locator("table.sessions")).to_have_count(0)
    assert site.memory.sessions.list("acme/ana") == []
    assert any("Lisbon" in m.text for m in site.memory.list_memories("acme/ana"))


def test_erase_needs_the_typed_user_id(page: Page, site: Site, shots: Path) -> None:
    sign_in(page, site, "acme")
    page.goto(f"{site.url}/users/ana")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export JSON").click()
    exported = Path(download.value.path()).read_text(encoding="utf-8")
    assert "Is allergic to peanuts" in exported and "acme/" not in exported

    page.get_by_role("link", name="Erase user…").click()
    page.screenshot(path=shots / "inspector-erase.png")
    page.get_by_label("Type the user id").fill("an")
    page.get_by_role("button", name="Erase everything").click()
    expect(page.get_by_role("alert")).to_contain_text("does not match")
    assert len(site.memory.list_memories("acme/ana")) == 5
    page.get_by_label("Type the user id").fill("ana")
    page.get_by_role("button", name="Erase everything").click()
    expect(page.get_by_role("status")).to_have_text("User erased.")
    expect(page.locator("table.users tbody tr")).to_have_count(1)
    assert site.memory.list_memories("acme/ana") == []
    assert len(site.memory.list_memories("acme/bob")) == 1


def _seed_graph(memory: TrueMem) -> datetime:
    """ana's project graph: PostgreSQL 14 replaced by 16, and a causal chain; returns an
    instant before the migration."""
    user = "acme/ana"
    memory.graph.add_entities(user, [EntitySpec("TrueMem", "project", ("the memory service",))])
    memory.graph.add_observations(user, [
        ObservationSpec("TrueMem", "Stores long-term memories for the support bot",
                        entity_type="project"),
        ObservationSpec("TrueMem", "Deployed on one VPS in Lisbon", entity_type="project")])
    memory.graph.add_relations(user, [
        RelationSpec("Ana", "works_on", "TrueMem", source_type="person"),
        RelationSpec("TrueMem", "uses", "PostgreSQL 14", target_type="tool")])
    time.sleep(1.1)  # the as-of field has whole seconds
    before = datetime.now(UTC)
    time.sleep(1.1)
    memory.graph.add_relations(user, [
        RelationSpec("TrueMem", "uses", "PostgreSQL 16", target_type="tool",
                     replaces="PostgreSQL 14"),
        RelationSpec("Disk full", "caused", "Outage", confidence=0.9,
                     evidence="PostgreSQL stopped writing at 03:12: no space left on device"),
        RelationSpec("Outage", "blocked", "TrueMem", evidence="No memory written for 50 min"),
        RelationSpec("Cheap VPS", "caused", "Disk full", evidence="The plan had a 10 GB disk"),
        RelationSpec("TrueMem", "led_to", "Migration plan",
                     evidence="The outage review asked for managed PostgreSQL")])
    return before


def test_an_entity_page_its_time_lines_and_as_of(page: Page, site: Site, shots: Path) -> None:
    before = _seed_graph(site.memory)
    sign_in(page, site, "acme")
    page.goto(f"{site.url}/users/ana")
    page.get_by_role("link", name="Knowledge graph").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Knowledge graph of ana")
    page.get_by_role("link", name="TrueMem", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("TrueMem")
    relations = page.locator("table.relations tbody tr")
    expect(relations.filter(has_text="PostgreSQL 14")).to_contain_text("ended")
    expect(relations.filter(has_text="PostgreSQL 16")).to_contain_text("current")
    causes = page.locator(".chain.causes li")
    expect(causes).to_have_count(3)
    expect(causes.first).to_contain_text("Outage blocked TrueMem")
    expect(causes.last).to_contain_text("The plan had a 10 GB disk")
    page.screenshot(path=shots / "inspector-entity.png", full_page=True)

    page.get_by_label("As of").fill(before.strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_role("button", name="Show").click()
    expect(relations.filter(has_text="PostgreSQL 14")).to_contain_text("current")
    expect(relations.filter(has_text="PostgreSQL 16")).to_have_count(0)
    expect(page.locator(".chain.causes")).to_contain_text("No known cause.")
    relations.get_by_role("link", name="Ana").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Ana")
    # a datetime-local input shows its value in the HTML normal form: no ":00" seconds
    shown = before.strftime("%Y-%m-%dT%H:%M:%S").removesuffix(":00")
    expect(page.get_by_label("As of")).to_have_value(shown)


def test_a_per_user_key_sees_only_its_user_and_a_reader_cannot_change(
    page: Page, site: Site,
) -> None:
    sign_in(page, site, "ana")
    expect(page).to_have_url(f"{site.url}/users/ana")
    expect(page.get_by_role("link", name="← All users")).to_have_count(0)
    page.goto(f"{site.url}/users/bob")
    expect(page.get_by_role("alert")).to_contain_text("only on its own user")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status")).to_have_text("Signed out.")

    sign_in(page, site, "reader")
    page.goto(f"{site.url}/users/ana")
    expect(page.locator(".tag.ro")).to_have_text("read-only")
    expect(page.get_by_role("link", name="Erase user…")).to_have_count(0)
    page.get_by_role("link", name="Is allergic to peanuts").click()
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    expect(page.locator("table.history")).to_contain_text("added")


def test_a_form_from_another_origin_is_refused(page: Page, site: Site) -> None:
    sign_in(page, site, "acme")
    target = f"{site.url}/users/ana/erase"
    evil = create_app(site.memory)  # any other origin: a page on another port

    @evil.get("/evil")
    async def form() -> object:
        from starlette.responses import HTMLResponse
        return HTMLResponse(f'<form method="post" action="{target}">'
                            '<input name="typed" value="ana"><button>win</button></form>')

    with serve(evil) as other:
        page.goto(f"{other}/evil")
        page.get_by_role("button", name="win").click()
        expect(page.get_by_role("alert")).to_contain_text("inspector's own pages")
    assert len(site.memory.list_memories("acme/ana")) == 5


def test_without_apt_get_the_install_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert _install_chromium() == "apt-get is not available"
