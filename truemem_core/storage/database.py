"""The database: URL resolution, engine, migrations, transactions, error translation.

A ``Database`` opens lazily: the first transaction migrates the schema and
checks that the store's vectors come from this embedder, so constructing one
does no I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool

from truemem_core.embeddings import compute
from truemem_core.embeddings.protocol import Embedder
from truemem_core.errors import EmbedderMismatchError, InvalidInputError, StorageError, require
from truemem_core.settings import default_database_url
from truemem_core.storage import sqlite_driver, vector_indexes
from truemem_core.storage.dialects import NO_BEGIN, Dialect, dialect_for
from truemem_core.storage.failures import storage_error
from truemem_core.storage.schema import store_meta

MIGRATIONS = Path(__file__).parent / "migrations"
VERSION_TABLE = "truemem_alembic_version"  # as in migrations/env.py
CONNECT_TIMEOUT_S = 10  # seconds to open a PostgreSQL connection (a URL's connect_timeout wins)
_MEMORY_WAIT_S = 120  # an in-memory store's callers wait their turn this long
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")


def resolve_url(database_url: Any) -> str:
    """A SQLAlchemy async URL from an argument, ``TRUEMEM_DATABASE_URL`` or the default.

    Accepts plain paths (SQLite), ``sqlite:///…`` and ``postgresql://…`` /
    ``postgres://…`` URLs; the async driver is filled in. Nothing is created here.
    """
    if database_url is None:
        raw = os.environ.get("TRUEMEM_DATABASE_URL") or default_database_url()
    elif isinstance(database_url, str | os.PathLike):
        raw = os.fspath(database_url)
        if not isinstance(raw, str):
            raise InvalidInputError("database_url must be a text path or URL, not bytes")
    else:
        raise InvalidInputError(
            f"database_url must be a path or URL string, got {type(database_url).__name__}")
    if not raw.strip():
        raise InvalidInputError("database_url is empty: give a SQLite path or a database URL")
    if "://" not in raw:
        if ":" in raw and not _WINDOWS_PATH.match(raw):
            raise InvalidInputError(
                f"not a database URL or path: {raw!r} (URLs look like postgresql://host/db "
                "or sqlite:///path/to/file.db)")
        raw = f"sqlite:///{Path(raw).expanduser()}"
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError) as exc:  # ValueError: a port that is no number
        raise InvalidInputError(f"not a database URL: {raw!r}") from exc
    backend = url.get_backend_name()
    if backend in ("postgres", "postgresql"):
        require("psycopg", "postgres")
        url = url.set(drivername="postgresql+psycopg")
    elif backend == "sqlite":
        url = url.set(drivername="sqlite+aiosqlite")
    else:
        raise InvalidInputError(f"unsupported database {backend!r}: use SQLite or PostgreSQL")
    return url.render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for PostgreSQL and in-memory SQLite)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def store_exists(database: Any = None) -> bool:
    """Whether ``database`` (a path or URL, as ``TrueMem`` takes it) names a store that
    is there: a SQLite file holding TrueMem's tables. A PostgreSQL URL or in-memory
    SQLite counts as one (nothing is connected to find out). Read only, nothing made."""
    path = sqlite_path(resolve_url(database))
    return path is None or holds_store(path)


def require_store(database: Any = None) -> None:
    """Refuse a SQLite path without a store (``InvalidInputError``): a typo must not
    create an empty one, nor turn another application's database (or an empty file)
    into one."""
    if not store_exists(database):
        path = sqlite_path(resolve_url(database))
        raise InvalidInputError(
            f"no TrueMem store at {path} (this command works on existing data and does not "
            "create one; check --database or $TRUEMEM_DATABASE_URL)")


def holds_store(path: Path) -> bool:
    """Whether the SQLite file at ``path`` has TrueMem's tables (read only, nothing made)."""
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as conn:
            found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                 (VERSION_TABLE,)).fetchone()
    except sqlite3.Error:  # not a SQLite file, or unreadable
        return False
    return found is not None


class Database:
    """An async engine with its dialect. The first transaction migrates, checks the
    embedder and runs ``loads``.

    ``embedder=None`` opens a store made with any embedder (to re-embed it). ``loads``
    load what later calls need (a local model, token tables) as the store opens: loading
    holds the interpreter lock, which every other call of the process would wait out if
    a call mid-traffic did it.
    """

    def __init__(self, url: str, *, embedder: Embedder | None,
                 loads: Sequence[Callable[[], object]] = ()) -> None:
        self.url = url
        self._loads = loads
        # (PostgreSQL's pooled connections are tested after idling: ``dialects``)
        self.engine: AsyncEngine = _engine(url)
        # the same pool, its connections' statements each on their own (``autocommit``)
        self._alone: AsyncEngine = self.engine.execution_options(**NO_BEGIN)
        self.dialect: str = self.engine.dialect.name
        self._dialect: Dialect = dialect_for(self.dialect)
        self._dialect.configure(self.engine)
        self._embedder = embedder
        self._opened = False
        self._opening: asyncio.Lock | None = None
        self._failed = False  # a database error happened (see close)
        self._file = sqlite_path(url)
        self._identity: tuple[int, int] | None = None  # the SQLite file opened (see _same_file)

    async def open(self) -> None:
        """Migrate the schema and check the embedder (once; later calls return at once)."""
        if self._opened:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._opened:
                return
            await self._open_once_free()
            self._opened = True

    async def _open_once_free(self) -> None:
        """Migrate and check, waiting out SQLite's 'busy' while other processes open the
        same new file (turning it to WAL briefly needs it alone, and that wait is not
        always covered by the busy timeout)."""
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 0.0):
            try:
                await self._migrate_and_check()
                return
            except StorageError as exc:
                if self.dialect != "sqlite" or "busy" not in str(exc) or not delay:
                    raise
                await asyncio.sleep(delay)

    async def _migrate_and_check(self) -> None:
        path = sqlite_path(self.url)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    "database error: the SQLite file's folder cannot be created "
                    "(a file is in the way, or no permission)") from exc
        async with self._transaction() as conn:
            await conn.run_sync(upgrade_if_behind)
            if self._file is not None:
                self._identity = _identity(self._file)
        embedder = self._embedder
        if embedder is not None:  # a FunctionEmbedder may embed to learn its dimension
            dimension = await asyncio.to_thread(lambda: embedder.dimension)
            await self._check_embedder(embedder.model_name, dimension)
        # in the embedder's low-priority threads, whose priority onnxruntime's threads inherit
        await asyncio.gather(*(compute.run(load) for load in self._loads))

    async def _check_embedder(self, model: str, dimension: int) -> None:
        """Record the store's embedder on first use; refuse a different one after."""
        wanted = {"embedding_model": model, "embedding_dimension": str(dimension)}
        read = select(store_meta.c.key, store_meta.c.value)
        async with self._transaction() as conn:
            stored = {row.key: row.value for row in await conn.execute(read)}
            if not stored.keys() & wanted.keys():
                # Stores opening a new database at once all find it empty: the first
                # insert wins, the others keep it and compare with it below.
                insert = (postgresql if self.dialect == "postgresql" else sqlite).insert
                await conn.execute(insert(store_meta).on_conflict_do_nothing(),
                                   [{"key": k, "value": v} for k, v in wanted.items()])
                if self.dialect == "postgresql":
                    await vector_indexes.create(conn, dimension)
                stored = {row.key: row.value for row in await conn.execute(read)}
        found = {k: stored.get(k) for k in wanted}
        if found != wanted:
            raise EmbedderMismatchError(
                f"this store's vectors were made with {found['embedding_model']} "
                f"({found['embedding_dimension']} dimensions) but this TrueMem embeds with "
                f"{model} ({dimension}); pass the same embedder, or re-embed the store with "
                "`truemem reembed` (memory.admin.reembed())"
            )

    async def set_embedder(self, conn: AsyncConnection, model: str, dimension: int) -> None:
        before = await conn.scalar(select(store_meta.c.value).where(
            store_meta.c.key == "embedding_dimension"))
        # the store's other facts (the server's message_id_key) stay
        await conn.execute(store_meta.delete().where(
            store_meta.c.key.in_(("embedding_model", "embedding_dimension"))))
        await conn.execute(
            store_meta.insert(),
            [
                {"key": "embedding_model", "value": model},
                {"key": "embedding_dimension", "value": str(dimension)},
            ],
        )
        if self.dialect == "postgresql":
            await vector_indexes.create(conn, dimension, replace=before != str(dimension))

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        """Serialise the writers of one user until ``conn``'s transaction ends."""
        await self._dialect.lock_user(conn, user_id)

    async def lock_users(self, conn: AsyncConnection, user_ids: Collection[str]) -> None:
        """``lock_user`` for many users, in one fixed order (no deadlock between two)."""
        await self._dialect.lock_users(conn, user_ids)

    @asynccontextmanager
    async def writing(self, *user_ids: str) -> AsyncIterator[AsyncConnection]:
        """The transaction of every writer of a user's rows: the users' locks are its
        first statement, before it reads what it decides on. Every writer taking them
        first, and several in one fixed order, no two writers wait on each other in a
        cycle, and none decides on a row another is changing."""
        async with self.transaction() as conn:
            if len(user_ids) == 1:
                await self.lock_user(conn, user_ids[0])
            else:
                await self.lock_users(conn, user_ids)
            yield conn

    @asynccontextmanager
    async def transaction(self, *, readonly: bool = False) -> AsyncIterator[AsyncConnection]:
        """One transaction; database errors surface as ``StorageError``.

        ``readonly`` lets SQLite readers run beside a writer (a deferred BEGIN);
        PostgreSQL ignores it.
        """
        await self.open()
        self._same_file()
        async with self._transaction(readonly=readonly) as conn:
            yield conn

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[AsyncConnection]:
        """A connection whose statements each run on their own, in their own snapshot and
        committed as they end: no BEGIN or COMMIT round trips. For independent reads
        (what PostgreSQL's READ COMMITTED gives each statement of a transaction anyway),
        and for a write that is one statement (atomic on its own)."""
        await self.open()
        self._same_file()
        try:
            async with self._alone.connect() as conn:
                yield conn
        except (DBAPIError, SQLAlchemyError) as exc:
            self._failed = True
            raise storage_error(exc) from exc

    @asynccontextmanager
    async def _transaction(self, *, readonly: bool = False) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.connect() as conn:
                if readonly:
                    await conn.execution_options(truemem_readonly=True)
                async with conn.begin():
                    yield conn
        except (DBAPIError, SQLAlchemyError) as exc:
            self._failed = True
            raise storage_error(exc) from exc

    def _same_file(self) -> None:
        """Refuse to go on when the SQLite file opened was deleted or replaced: the open
        connections would keep serving (and writing) a file no one will read again, and a
        new one would start an empty store at its path. One ``stat``, no I/O beyond it."""
        if self._identity is not None and _identity(self._file) != self._identity:
            raise StorageError(
                "database error: the SQLite file was deleted or replaced after this process "
                "opened it; restore it and restart the process")

    async def close(self) -> None:
        await self.engine.dispose()
        if self._failed and self.dialect == "sqlite":
            # After a failed connect, aiosqlite's thread still posts a result to this
            # loop; give it the moment it needs before the loop closes.
            await asyncio.sleep(0.1)


def _identity(path: Path | None) -> tuple[int, int] | None:
    """The device and inode of a file (None when there is none at ``path``)."""
    try:
        found = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if found is None else (found.st_dev, found.st_ino)


def _engine(url: str) -> AsyncEngine:
    """The engine for ``url``; SQLite's connections make one trip per statement to their
    thread (``sqlite_driver``)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # autocommit at the driver; transactions send their own BEGIN (``dialects``).
        # A server that accepts the connection and never answers (frozen, a half-open
        # network path) would hold a call, or a worker starting, for ever: connecting
        # gives up after CONNECT_TIMEOUT_S unless the URL says otherwise.
        wait = {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
        return create_async_engine(url, isolation_level="AUTOCOMMIT", connect_args=wait)

    async def connect() -> Any:
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        return await sqlite_driver.connect(*args, **kwargs)

    if parsed.database in (None, "", ":memory:"):
        # An in-memory database lives in its one connection. SQLAlchemy's default shares
        # it among callers at once (StaticPool), so a background job's BEGIN would land
        # inside a read's or another job's transaction; a pool of one makes them take turns.
        engine = create_async_engine(url, async_creator=connect, poolclass=AsyncAdaptedQueuePool,
                                     pool_size=1, max_overflow=0, pool_timeout=_MEMORY_WAIT_S)
        return engine
    engine = create_async_engine(url, async_creator=connect)
    return engine


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@lru_cache(maxsize=1)
def head_revision() -> str | None:
    """The newest migration (read from the scripts once per process)."""
    return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision the store's schema is at (None: no schema yet)."""
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def upgrade_if_behind(connection: Connection) -> None:
    """Bring the schema to the newest revision; at head, only the version is read
    (loading Alembic's scripts costs more than the rest of opening a store)."""
    if current_revision(connection) != head_revision():
        upgrade(connection)


# Alembic keeps its migration context in a process global: two stores of one process
# opening at once (each TrueMem has its own loop thread) must not migrate together.
_MIGRATING = threading.Lock()


def upgrade(connection: Connection) -> None:
    """Bring the schema to the newest revision (a no-op when it already is)."""
    config = _config()
    config.attributes["connection"] = connection
    with _MIGRATING:
        command.upgrade(config, "head")
