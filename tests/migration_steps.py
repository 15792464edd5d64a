"""Run Alembic on a store directly, as ``TrueMem`` does on opening, but to any revision."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, event, inspect, text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from truemem_core.storage.database import MIGRATIONS, resolve_url


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _alembic(connection: Connection, action: str, revision: str) -> None:
    config = _config()
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


async def migrate(url: str, action: str, revision: str) -> None:
    """``action`` ("upgrade" or "downgrade") the store at ``url`` to ``revision``."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, action, revision)
    finally:
        await engine.dispose()


async def current(url: str) -> str:
    """The store's revision."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return str((await conn.execute(
                text("SELECT version_num FROM truemem_alembic_version"))).scalar_one())
    finally:
        await engine.dispose()


async def tables(url: str) -> set[str]:
    """The names of the store's tables."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


async def indexes(url: str, table: str) -> set[str]:
    """The names of ``table``'s indexes."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return {index["name"] for index in await conn.run_sync(
                lambda sync: inspect(sync).get_indexes(table))}
    finally:
        await engine.dispose()


async def index_comes_and_goes(url: str, table: str, index: str, before: str) -> None:
    """Check a store at the head has ``index`` on ``table``, loses it when downgraded to
    ``before``, and has it again when upgraded back."""
    assert await current(url) == head()
    assert index in await indexes(url, table)
    await migrate(url, "downgrade", before)
    assert index not in await indexes(url, table)
    await migrate(url, "upgrade", "head")
    assert index in await indexes(url, table)


async def sqlite_plans(url: str, reads: Callable[[AsyncConnection], Awaitable[Any]]) -> list[str]:
    """SQLite's plan of each statement ``reads`` sends (in a transaction rolled back):
    the SQL and parameters it ran with, explained."""
    engine = create_async_engine(resolve_url(url))
    issued: list[tuple[str, Any]] = []
    event.listen(engine.sync_engine, "before_cursor_execute",
                 lambda _conn, _cursor, sql, parameters, *_: issued.append((sql, parameters)))
    try:
        async with engine.begin() as conn:
            await reads(conn)
            plans = []
            for sql, parameters in list(issued):
                rows = await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, parameters)
                plans.append("\n".join(str(row[3]) for row in rows))
            await conn.rollback()
            return plans
    finally:
        await engine.dispose()


def head() -> str:
    return str(ScriptDirectory.from_config(_config()).get_current_head())
