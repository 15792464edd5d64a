"""What differs per database below the SQL of search: connection set-up and the user locks.

On both databases the driver's connections run in autocommit mode and a transaction
begins with a BEGIN of TrueMem's own (``begin_ourselves``), so ``Database.autocommit``
runs statements on their own by leaving it out: no round trip, and nothing to set on
a connection as it is taken from the pool and reset as it goes back (on PostgreSQL,
switching psycopg's autocommit on and off around each such use took two trips through
SQLAlchemy's and psycopg's async machinery on the event loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from sqlalchemy import event, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

PING_AFTER_IDLE_S = 1.0
"""PostgreSQL: a pooled connection idle longer than this is tested before it is used."""

_NO_BEGIN = "truemem_no_begin"
NO_BEGIN = {_NO_BEGIN: True}
"""Execution options of ``Database.autocommit``: each statement on its own, no BEGIN."""

GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"
"""PostgreSQL: a prepared statement is planned once per connection (``PostgreSQL``)."""

VECTOR_SEARCH = "SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = 200"
"""PostgreSQL: a search of the HNSW indexes (``search.channels.postgres``) goes on past
its first ``ef_search`` candidates until it has the rows the user filter lets through
(pgvector 0.8's iterative scan, in about the order of distance: TrueMem ranks them)."""


class Dialect(Protocol):
    def configure(self, engine: AsyncEngine) -> None:
        """Connection-level settings (pragmas, transaction start)."""

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        """Serialise the writers of one user until the transaction ends."""

    async def lock_users(self, conn: AsyncConnection, user_ids: Collection[str]) -> None:
        """``lock_user`` for many users at once, in one fixed order: two transactions
        locking overlapping sets never wait on each other in a cycle."""


def begin_ourselves(engine: AsyncEngine, begin: Callable[[Mapping[str, Any]], str]) -> None:
    """Start each transaction with the statement ``begin`` gives for the connection's
    execution options, unless those are ``NO_BEGIN`` (the driver is in autocommit mode,
    so a statement outside a BEGIN commits on its own)."""
    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        options = conn.get_execution_options()
        if not options.get(_NO_BEGIN, False):
            conn.exec_driver_sql(begin(options))


class SQLite:
    def configure(self, engine: AsyncEngine) -> None:
        @event.listens_for(engine.sync_engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            # the wait first: switching a new file to WAL needs it alone, and a
            # connection opening beside another must wait for that, not fail
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        # IMMEDIATE takes the write lock up front, so read-then-write transactions
        # queue instead of failing with "database is locked".
        begin_ourselves(engine, lambda options: (
            "BEGIN" if options.get("truemem_readonly", False) else "BEGIN IMMEDIATE"))

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        return None  # BEGIN IMMEDIATE already serialises every writer

    async def lock_users(self, conn: AsyncConnection, user_ids: Collection[str]) -> None:
        return None  # as for one user


class PostgreSQL:
    def configure(self, engine: AsyncEngine) -> None:
        # psycopg's connections are in autocommit mode (the engine's isolation level):
        # a transaction runs at the server's default isolation, as psycopg's own BEGIN
        # would; psycopg commits or rolls back whatever transaction the server has open.
        begin_ourselves(engine, lambda _options: "BEGIN")

        # psycopg prepares a statement on its fifth run on a connection. Left to choose,
        # PostgreSQL then re-planned most search statements on every call (their generic
        # plan's estimate rarely beat the custom ones'). TrueMem's statements find a
        # user's rows through an index on user_id, or rows by key, so one plan fits all
        # their values.
        @event.listens_for(engine.sync_engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(GENERIC_PLANS)
            cursor.execute(VECTOR_SEARCH)
            cursor.close()

        # A server can restart under the pool, so a connection is tested when taken,
        # but only after it sat idle: a busy instance takes connections back within
        # milliseconds, and a test on every checkout was a round trip per statement
        # group. A restart while busy fails the calls then in flight (StorageError);
        # the disconnect invalidates the whole pool, so the next calls reconnect.
        @event.listens_for(engine.sync_engine, "checkin")
        def _checkin(_dbapi_connection: Any, record: Any) -> None:
            record.info["idle_since"] = time.monotonic()

        @event.listens_for(engine.sync_engine, "checkout")
        def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
            idle_since = record.info.pop("idle_since", None)  # None: a new connection
            if idle_since is None or time.monotonic() - idle_since <= PING_AFTER_IDLE_S:
                return
            try:
                alive = engine.dialect.do_ping(dbapi_connection)
            except engine.dialect.loaded_dbapi.Error as exc:
                raise DisconnectionError("the connection was lost") from exc
            if not alive:
                raise DisconnectionError("the connection was lost")

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        await conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:user_id, 0))"),
            {"user_id": user_id},
        )

    async def lock_users(self, conn: AsyncConnection, user_ids: Collection[str]) -> None:
        # One statement; ordered by the lock key itself, so users whose keys collide
        # cannot invert the order. A volatile call is evaluated after the ORDER BY.
        await conn.execute(
            text("SELECT pg_advisory_xact_lock(key) FROM (SELECT DISTINCT "
                 "hashtextextended(u, 0) AS key FROM unnest(CAST(:users AS text[])) AS u) "
                 "AS keys ORDER BY key"),
            {"users": list(user_ids)},
        )


def dialect_for(name: str) -> Dialect:
    if name == "postgresql":
        return PostgreSQL()
    if name == "sqlite":
        return SQLite()
    raise NotImplementedError(f"unsupported database {name!r}: use SQLite or PostgreSQL")
