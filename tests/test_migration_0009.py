"""Migration 0009: the API keys table of the HTTP service, on both backends; it reverses."""

from __future__ import annotations

from migration_steps import current, head, migrate, tables

from truemem_core import TrueMem
from truemem_server.keys import KeyStore


async def test_the_keys_table_comes_and_goes(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0008")
    assert "api_keys" not in await tables(tmp_url)
    store = KeyStore(tmp_url)
    try:
        made, key = await store.create("acme", user="ana", read_only=True, name="phone")
        assert await current(tmp_url) == head()  # opening the store upgrades it to the head
        found = await store.verify(key)
        assert found is not None and (found.tenant, found.user, found.read_only) == (
            "acme", "ana", True)
        assert await store.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
        await store.revoke(made.id)
        assert await store.verify(key) is None
    finally:
        await store.close()
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("acme/ana", "Lives in Lisbon")
    await migrate(tmp_url, "downgrade", "0008")
    assert "api_keys" not in await tables(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert "api_keys" in await tables(tmp_url)
    async with TrueMem(tmp_url) as memory:
        assert [m.text for m in await memory.alist_memories("acme/ana")] == ["Lives in Lisbon"]
