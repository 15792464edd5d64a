"""Migration 0009 once made the HTTP service's ``api_keys`` table; the table is now the
server's (``truemem_server/key_table.py``): the core's schema makes none, its upgrades
and downgrades leave a store's keys alone, and a table the old 0009 made is the
server's as it is, keys and all. On both backends."""

from __future__ import annotations

from datetime import datetime

import db_access
import sqlalchemy as sa
from migration_steps import current, head, indexes, migrate, tables

from truemem_core import TrueMem
from truemem_core.storage.schema import UTCDateTime
from truemem_server.keys import KeyStore, hash_key


async def test_the_core_makes_no_keys_table(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("acme/ana", "Lives in Lisbon")
    assert await current(tmp_url) == head()
    assert "api_keys" not in await tables(tmp_url)


async def test_the_core_migrations_leave_the_keys_alone(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0008")
    store = KeyStore(tmp_url)
    try:
        made, key = await store.create("acme", user="ana", read_only=True, name="phone")
        assert await current(tmp_url) == head()  # opening the store upgrades it to the head
        assert await store.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    finally:
        await store.close()
    await migrate(tmp_url, "downgrade", "0008")  # below the revision that once made it
    await migrate(tmp_url, "upgrade", "head")
    store = KeyStore(tmp_url)
    try:
        found = await store.verify(key)
        assert found is not None and (found.id, found.tenant, found.user, found.read_only) == (
            made.id, "acme", "ana", True)
    finally:
        await store.close()


# The table as the core's migration 0009 made it, before it moved to the server.
OLD_TABLE = sa.Table(
    "api_keys", sa.MetaData(),
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("secret_hash", sa.String(64), nullable=False),
    sa.Column("tenant", sa.String(63), nullable=False),
    sa.Column("user_id", sa.String(255), nullable=True),
    sa.Column("read_only", sa.Boolean, nullable=False),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("revoked_at", UTCDateTime, nullable=True),
    sa.Index("ix_api_keys_tenant_created", "tenant", "created_at"),
)


async def test_a_table_the_old_migration_made_keeps_its_keys(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("acme/ana", "Lives in Lisbon")
    key = "tm_0123456789abcdef_" + "k" * 43
    made = datetime.fromisoformat("2026-01-02T03:04:05+00:00")
    with db_access.connect(tmp_url) as conn:
        OLD_TABLE.create(conn)
        conn.execute(OLD_TABLE.insert(), {
            "id": "0123456789abcdef", "secret_hash": hash_key(key), "tenant": "acme",
            "user_id": None, "read_only": False, "name": "old", "created_at": made,
            "revoked_at": None})
    store = KeyStore(tmp_url)
    try:
        found = await store.verify(key)
        assert found is not None and (found.tenant, found.name, found.created_at) == (
            "acme", "old", made)
        _, new = await store.create("acme")
        assert [k.name for k in await store.list_keys("acme")] == ["old", None]
        assert await store.verify(new) is not None
    finally:
        await store.close()
    assert "ix_api_keys_tenant_created" in await indexes(tmp_url, "api_keys")
