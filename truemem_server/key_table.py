"""The server's table in the store: ``api_keys``, made and migrated by the server.

One row per key, hashes only: ``id`` is the public key id (the part of the key after
``tm_`` and before the secret), ``secret_hash`` the SHA-256 of the whole key.
``tenant`` is the namespace every user id of the key lives in; ``user_id`` (in the
tenant, without its prefix) limits the key to one end user; ``read_only`` forbids
writes; ``revoked_at`` ends the key without losing the row.

The core keeps no server table: ``ensure`` makes this one where it is missing
(``IF NOT EXISTS``, so that processes opening one store at once all succeed), the
first time a process uses its keys. A store made before the table moved here has it
already, with this shape, from the core's old migration 0009: it is kept as it is,
keys and all. A later change of its shape will be the server's own migration, run
from ``ensure``.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, MetaData, String, Table, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateIndex, CreateTable

from truemem_core import UTCDateTime

metadata = MetaData()

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("secret_hash", String(64), nullable=False),
    Column("tenant", String(63), nullable=False),
    Column("user_id", String(255), nullable=True),
    Column("read_only", Boolean, nullable=False),
    Column("name", String(255), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime, nullable=True),
    Index("ix_api_keys_tenant_created", "tenant", "created_at"),
)
_LOCK = 7303106  # PostgreSQL: servers starting together create the table one at a time


async def ensure(conn: AsyncConnection) -> None:
    """Make the table and its index where they are missing (in ``conn``'s transaction)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(text(f"SELECT pg_advisory_xact_lock({_LOCK})"))
    await conn.execute(CreateTable(api_keys, if_not_exists=True))
    for index in api_keys.indexes:
        await conn.execute(CreateIndex(index, if_not_exists=True))
