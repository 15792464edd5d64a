"""Migration 0008: past messages become searchable by words and fragments.

Messages stored before the upgrade are indexed by it (they are found by their
words with no vector at all), new ones by the
triggers or the generated column; an erased user leaves no index rows; the
downgrade removes what the upgrade added, and the upgrade runs again cleanly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from migration_steps import current, head, migrate
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import TrueMem
from truemem_core.storage.database import resolve_url
from truemem_core.storage.schema import messages

_SAID = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


async def _insert_old_messages(url: str) -> None:
    rows: list[dict[str, Any]] = [
        {"user_id": user, "session_id": "old", "role": role, "content": content, "tokens": 9,
         "summarized": False, "created_at": _SAID, "embedding": None}
        for user, role, content in (
            ("ana", "user", "Which harbour did we sail from in Croatia?"),
            ("ana", "assistant", "You sailed from the Zadar marina on the ketch Veritas."),
            ("bob", "assistant", "You sailed from the Split marina."))]
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.begin() as conn:
            await conn.execute(messages.insert(), rows)
    finally:
        await engine.dispose()


async def _objects(url: str) -> set[str]:
    """The search objects 0008 owns that exist in the store."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                found = await conn.execute(text(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = 'messages' AND column_name = 'search_vector'"))
            else:
                found = await conn.execute(text(
                    "SELECT name FROM sqlite_master WHERE name LIKE 'messages\\_%' ESCAPE '\\'"))
            return {row[0] for row in found}
    finally:
        await engine.dispose()


async def _recalled(url: str, user: str, query: str) -> list[str]:
    async with TrueMem(url) as memory:
        context = await memory.aget_context(user, "new", query)
        return [turn.content for turn in context.recalled]


async def test_old_messages_are_indexed_and_the_migration_reverses(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0007")
    await _insert_old_messages(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert await current(tmp_url) == head()
    assert await _objects(tmp_url)
    # no vectors: found by the keyword channel (and the question next to it)
    assert (await _recalled(tmp_url, "ana", "Veritas"))[0] == (
        "You sailed from the Zadar marina on the ketch Veritas.")
    assert "You sailed from the Zadar marina on the ketch Veritas." in await _recalled(
        tmp_url, "ana", "marinas of Zadar")
    assert await _recalled(tmp_url, "bob", "Veritas") == []
    async with TrueMem(tmp_url) as memory:  # new messages are indexed by the triggers
        await memory.arecord_messages("bob", "trip", [("user", "We chartered the Nautilus.")])
        await memory.aerase_user("ana")
    assert await _recalled(tmp_url, "bob", "Nautilus") == ["We chartered the Nautilus."]
    assert await _recalled(tmp_url, "ana", "Veritas") == []

    await migrate(tmp_url, "downgrade", "0007")
    assert await _objects(tmp_url) == set()
    await migrate(tmp_url, "upgrade", "head")
    assert "You sailed from the Split marina." in await _recalled(tmp_url, "bob", "Split marina")
