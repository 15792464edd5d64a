"""``StoreDatabase``: a store's database for an application's own tables beside
TrueMem's (the HTTP server keeps its API keys there), its readiness and its secret.

TrueMem's own tables stay internal: an application reads and writes them through
``TrueMem`` only, and keeps its tables under names of its own, made and migrated by
itself (the server: ``truemem_server/key_table.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.errors import StorageError
from truemem_core.storage.database import (
    Database,
    current_revision,
    head_revision,
    require_store,
    resolve_url,
)
from truemem_core.storage.schema import UTCDateTime, store_meta

__all__ = ["StoreDatabase", "UTCDateTime"]  # UTCDateTime: the time columns of such tables

SECRET_KEY = "message_id_key"  # the name migration 0019 made the secret under


class StoreDatabase:
    """The store at ``database_url`` (as ``TrueMem`` takes it), opened without an
    embedder. Its first use creates the store or brings its schema to the newest, as a
    ``TrueMem`` would; ``create=False`` refuses, at once, a SQLite path that holds no
    store (a mistyped path must not become an empty store). Construction does no I/O
    beyond that check. Async only; errors surface as ``StorageError``."""

    def __init__(self, database_url: Any = None, *, create: bool = True) -> None:
        if not create:
            require_store(database_url)
        self._db = Database(resolve_url(database_url), embedder=None)

    @property
    def url(self) -> str:
        """The SQLAlchemy async URL of the store."""
        return self._db.url

    @asynccontextmanager
    async def transaction(self, *, readonly: bool = False) -> AsyncIterator[AsyncConnection]:
        """One SQLAlchemy transaction on the store; ``readonly`` lets SQLite readers run
        beside a writer. A SQLite file deleted or replaced since it opened is refused."""
        async with self._db.transaction(readonly=readonly) as conn:
            yield conn

    async def check(self, timeout: float) -> None:
        """Whether the store can serve: open it (migrating it, once a process), then read
        its schema's revision within ``timeout`` seconds. Raises ``StorageError`` saying
        what to fix (the schema behind or ahead of this code's newest migration too), or
        ``TimeoutError``."""
        await self._db.open()
        async with asyncio.timeout(timeout), self._db.autocommit() as conn:
            revision = await conn.run_sync(current_revision)
        if revision != head_revision():
            raise StorageError(
                f"database error: schema at {revision}, expected {head_revision()}")

    async def secret(self) -> bytes:
        """32 random bytes made with the store and kept in it: the same in every process
        on the store, shown by TrueMem nowhere. For an application's keyed hashes (the
        server shows message ids through a permutation keyed with it)."""
        async with self._db.transaction(readonly=True) as conn:
            value = (await conn.execute(select(store_meta.c.value).where(
                store_meta.c.key == SECRET_KEY))).scalar_one()
        return bytes.fromhex(value)

    async def close(self) -> None:
        await self._db.close()
