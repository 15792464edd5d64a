"""What an application beside TrueMem gets from the public API (the HTTP server uses
nothing else): the store's users (``list_users``), and ``StoreDatabase`` for tables of
its own, the store's readiness and its secret. On both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from migration_steps import head, migrate

from truemem_core import InvalidInputError, StorageError, StoreDatabase, TrueMem


async def test_the_store_lists_its_users_by_prefix(memory: TrueMem) -> None:
    for user in ("acme/ana", "acme/bob", "acme/bo", "acme%/x", "beta/ana"):
        await memory.aadd_memory(user, f"A fact of {user}")
    await memory.aadd_memory("acme/ana", "Plays the cello")
    await memory.arecord("acme/carl", "s1", "Hello there", "Hi!")
    await memory.arecord("acme/ana", "s1", "Hello again", "Hi!")
    listed = await memory.admin.alist_users("acme/")
    assert [(u.user_id, u.memories, u.sessions) for u in listed] == [
        ("acme/ana", 2, 1), ("acme/bo", 1, 0), ("acme/bob", 1, 0), ("acme/carl", 0, 1)]
    ana = listed[0]
    assert ana.last_change is not None and ana.last_change.tzinfo is not None
    assert ana.to_dict()["last_change"] == ana.last_change.isoformat()
    assert [u.user_id for u in await memory.admin.alist_users("acme/bo")] == ["acme/bo", "acme/bob"]
    # no wildcard:
    assert [u.user_id for u in await memory.admin.alist_users("acme%")] == ["acme%/x"]
    assert [u.user_id for u in await memory.admin.alist_users("acme/", limit=2)] == [
        "acme/ana", "acme/bo"]
    assert len(await memory.admin.alist_users()) == 6
    for bad in ({"prefix": 3}, {"prefix": "a\x00"}, {"limit": 0}, {"limit": True}):
        with pytest.raises(InvalidInputError):
            await memory.admin.alist_users(**bad)  # type: ignore[arg-type]


def test_the_sync_twin_lists_the_same(memory: TrueMem) -> None:
    memory.add_memory("acme/ana", "Lives in Lisbon")
    assert [u.user_id for u in memory.admin.list_users("acme/")] == ["acme/ana"]


async def test_a_store_database_is_ready_once_migrated_and_keeps_one_secret(
        tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0008")
    store, other = StoreDatabase(tmp_url), StoreDatabase(tmp_url)
    try:
        await store.check(timeout=5)  # opening brings the schema to the newest
        secret = await store.secret()
        assert len(secret) == 32 and await other.secret() == secret
        await migrate(tmp_url, "downgrade", "0008")  # behind the open store's back
        with pytest.raises(StorageError, match=f"schema at 0008, expected {head()}"):
            await store.check(timeout=5)
    finally:
        await store.close()
        await other.close()


async def test_an_application_keeps_a_table_of_its_own(store_url: str) -> None:
    notes = sa.Table("app_notes", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                     sa.Column("text", sa.Text))
    store = StoreDatabase(store_url)
    try:
        async with store.transaction() as conn:
            await conn.run_sync(notes.create)
            await conn.execute(notes.insert(), {"id": 1, "text": "kept"})
        async with store.transaction(readonly=True) as conn:
            assert (await conn.execute(sa.select(notes.c.text))).scalar_one() == "kept"
        with pytest.raises(StorageError):  # a database error, in words
            async with store.transaction() as conn:
                await conn.execute(notes.insert(), {"id": 1, "text": "twice"})
    finally:
        await store.close()


def test_a_path_without_a_store_is_refused_unless_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(InvalidInputError, match="no TrueMem store"):
        StoreDatabase(str(missing), create=False)
    assert not missing.exists()
    assert StoreDatabase(str(missing)).url.endswith("typo.db")  # nothing made until used
    assert not missing.exists()
