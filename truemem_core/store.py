"""The database: URL resolution, engine, migrations, transactions, error translation."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from .backends import Backend, backend_for
from .errors import EmbedderMismatchError, InvalidInputError, StorageError, require
from .schema import store_meta
from .settings import default_database_url

MIGRATIONS = Path(__file__).parent / "migrations"


def resolve_url(database_url: str | os.PathLike[str] | None) -> str:
    """A SQLAlchemy async URL from an argument, ``TRUEMEM_DATABASE_URL`` or the default.

    Accepts plain paths (SQLite), ``sqlite:///…`` and ``postgresql://…`` /
    ``postgres://…`` URLs; the async driver is filled in.
    """
    raw = os.fspath(database_url) if database_url is not None else None
    raw = raw or os.environ.get("TRUEMEM_DATABASE_URL") or default_database_url()
    if "://" not in raw:
        raw = f"sqlite:///{Path(raw).expanduser()}"
    try:
        url = make_url(raw)
    except ArgumentError as exc:
        raise InvalidInputError(f"not a database URL: {raw!r}") from exc
    backend = url.get_backend_name()
    if backend in ("postgres", "postgresql"):
        require("psycopg", "postgres")
        url = url.set(drivername="postgresql+psycopg")
    elif backend == "sqlite":
        url = url.set(drivername="sqlite+aiosqlite")
        if url.database and url.database != ":memory:":
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    else:
        raise InvalidInputError(f"unsupported database {backend!r}: use SQLite or PostgreSQL")
    return url.render_as_string(hide_password=False)


class Database:
    """An async engine with its dialect backend. ``open()`` migrates and checks the embedder."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: AsyncEngine = create_async_engine(url, pool_pre_ping=True)
        self.backend: Backend = backend_for(self.engine.dialect.name)
        self.backend.configure(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    async def open(self, *, embedding_model: str, dimension: int, check: bool = True) -> None:
        async with self.transaction() as conn:
            await conn.run_sync(upgrade)
        if check:
            await self.check_embedder(embedding_model, dimension)

    async def check_embedder(self, model: str, dimension: int) -> None:
        """Record the store's embedder on first use; refuse a different one after."""
        wanted = {"embedding_model": model, "embedding_dimension": str(dimension)}
        async with self.transaction() as conn:
            rows = await conn.execute(select(store_meta.c.key, store_meta.c.value))
            stored = {row.key: row.value for row in rows}
            if not stored.keys() & wanted.keys():
                await conn.execute(
                    store_meta.insert(), [{"key": k, "value": v} for k, v in wanted.items()]
                )
                return
        found = {k: stored.get(k) for k in wanted}
        if found != wanted:
            raise EmbedderMismatchError(
                f"this store's vectors were made with {found['embedding_model']} "
                f"({found['embedding_dimension']} dimensions) but this TrueMem embeds with "
                f"{model} ({dimension}); pass the same embedder, or re-embed the store with "
                "`truemem reembed` (TrueMem.reembed())"
            )

    async def set_embedder(self, conn: AsyncConnection, model: str, dimension: int) -> None:
        await conn.execute(store_meta.delete())
        await conn.execute(
            store_meta.insert(),
            [
                {"key": "embedding_model", "value": model},
                {"key": "embedding_dimension", "value": str(dimension)},
            ],
        )

    @asynccontextmanager
    async def transaction(self, *, readonly: bool = False) -> AsyncIterator[AsyncConnection]:
        """One transaction; database errors surface as ``StorageError``.

        ``readonly`` lets SQLite readers run beside a writer (a deferred BEGIN);
        PostgreSQL ignores it.
        """
        try:
            async with self.engine.connect() as conn:
                if readonly:
                    await conn.execution_options(truemem_readonly=True)
                async with conn.begin():
                    yield conn
        except (DBAPIError, SQLAlchemyError) as exc:
            raise StorageError(f"database error: {exc.__class__.__name__}: {exc}") from exc

    async def close(self) -> None:
        await self.engine.dispose()


def upgrade(connection: Connection) -> None:
    """Bring the schema to the newest revision (a no-op when it already is)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
