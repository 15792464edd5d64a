"""Run Alembic on a store directly, as ``TrueMem`` does on opening, but to any revision."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

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


def head() -> str:
    return str(ScriptDirectory.from_config(_config()).get_current_head())
