"""Opening stores: URLs, migrations, the embedder check and re-embedding, settings."""

from __future__ import annotations

import asyncio
import os
import secrets
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import services
from db_access import connect
from sqlalchemy import Column, Integer, MetaData, Table, inspect, select
from sqlalchemy.engine import make_url

from truemem_core import EmbedderMismatchError, InvalidInputError, Settings, StorageError, TrueMem
from truemem_core.embeddings import Vector, normalize
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import EmbeddingType

TABLES = {"memories", "memory_events", "sessions", "messages", "jobs", "truemem_meta"}


class LetterEmbedder:
    """A different vector space: letter counts (a real, if crude, embedder)."""

    model_name = "letter-counts"
    dimension = 26

    def embed(self, texts: Sequence[str]) -> Vector:
        rows = [[t.lower().count(chr(97 + i)) for i in range(26)] for t in texts]
        return normalize(np.asarray(rows, dtype=np.float32) + 1e-3)


def _tables(url: str) -> set[str]:
    async def run() -> set[str]:
        db = Database(resolve_url(url), embedder=None)
        await db.open()
        async with db.transaction() as conn:
            names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
        await db.close()
        return names

    return asyncio.run(run())


def test_migrations_upgrade_from_empty_and_are_idempotent(tmp_url: str) -> None:
    with connect(tmp_url) as conn:
        assert not set(inspect(conn).get_table_names()) & TABLES  # really from empty
    assert _tables(tmp_url) >= TABLES
    assert _tables(tmp_url) >= TABLES  # second upgrade: nothing to do, nothing breaks
    with TrueMem(tmp_url) as memory:
        memory.add_memory("ana", "Lives in Lisbon")
    with TrueMem(tmp_url) as memory:  # reopening keeps the data
        assert [m.text for m in memory.list_memories("ana")] == ["Lives in Lisbon"]


def test_vectors_are_stored_exactly(store_url: str) -> None:
    vectors = np.random.default_rng(3).standard_normal((4, 384)).astype(np.float32)
    vectors[0, :3] = (np.float32(1e-30), np.float32(-3.4e38), np.nextafter(np.float32(1), 2))
    table = Table("roundtrip", MetaData(), Column("id", Integer, primary_key=True),
                  Column("embedding", EmbeddingType()))

    async def run() -> list[Vector]:
        db = Database(resolve_url(store_url), embedder=None)
        await db.open()
        try:
            async with db.transaction() as conn:
                await conn.run_sync(table.create)
                await conn.execute(table.insert(), [
                    {"id": i, "embedding": v} for i, v in enumerate(vectors)])
                rows = await conn.execute(select(table.c.embedding).order_by(table.c.id))
                return [row.embedding for row in rows]
        finally:
            await db.close()

    stored = asyncio.run(run())
    assert all(np.array_equal(got, want) for got, want in zip(stored, vectors, strict=True))


def test_other_embedder_is_refused_until_reembedded(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        memory.add_memory("ana", "Lives in Lisbon")
        memory.add_memory("ana", "Has a golden retriever named Max")
    with TrueMem(store_url, embedder=LetterEmbedder()) as other:
        with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
            other.list_memories("ana")
        seen: list[tuple[int, int]] = []
        assert other.admin.reembed(progress=lambda done, total: seen.append((done, total))) == 2
        assert seen[-1] == (2, 2)
        assert len(other.search("ana", "Lisbon")) == 2
    with TrueMem(store_url) as memory, pytest.raises(EmbedderMismatchError):
        memory.list_memories("ana")


def test_urls() -> None:
    assert resolve_url("/tmp/x.db") == "sqlite+aiosqlite:////tmp/x.db"
    assert resolve_url("postgres://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert resolve_url("postgresql://u@h/db").startswith("postgresql+psycopg://")
    with pytest.raises(InvalidInputError, match="unsupported database"):
        resolve_url("mysql://u@h/db")


def test_default_url_and_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TRUEMEM_DATABASE_URL", raising=False)
    assert resolve_url(None) == f"sqlite+aiosqlite:///{tmp_path}/.truemem/truemem.db"
    monkeypatch.setenv("TRUEMEM_DATABASE_URL", str(tmp_path / "env.db"))
    assert resolve_url(None).endswith("/env.db")


def test_unreachable_database_is_a_storage_error(tmp_path: Path) -> None:
    url = f"postgresql://nobody@/db?host={tmp_path}"  # no server listens on that socket
    with TrueMem(url) as memory, pytest.raises(StorageError) as caught:
        memory.list_memories("ana")
    assert caught.value.__cause__ is not None
    # in words: no driver name, socket path or SQL in what a user may be shown
    assert str(caught.value) == (
        "database error: the database is unreachable or the connection was lost")


def test_a_database_refusing_the_url_says_what_to_fix(
    postgres_url: str, _postgres_admin_url: str
) -> None:
    """No role, no database, no right to create the vector extension: each in words an
    operator can act on (not "unreachable"), and none naming the role or the database."""
    import psycopg

    url = make_url(postgres_url)
    name, role = f"truemem_nopriv_{secrets.token_hex(3)}", f"truemem_app_{secrets.token_hex(3)}"
    admin = services.libpq_url(_postgres_admin_url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE ROLE "{role}_out" NOLOGIN')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{role}"')
        conn.execute(f'CREATE DATABASE "{name}_shut" ALLOW_CONNECTIONS false')
        conn.execute(f'CREATE DATABASE "{name}_priv"')
        conn.execute(f'REVOKE CONNECT ON DATABASE "{name}_priv" FROM PUBLIC')
    try:
        cases = {
            url.set(database="truemem_no_such_database"): "the URL names does not exist",
            url.set(username="truemem_no_such_role"): "refused the user name or password",
            url.set(database=name, username=role): "CREATE EXTENSION vector",
            url.set(username=f"{role}_out"): "a role that may not log in",
            url.set(database=f"{name}_shut"): "accepts no connections now",
            url.set(database=f"{name}_priv", username=role): "needs the CONNECT privilege",
        }
        for wrong, says in cases.items():
            with TrueMem(wrong.render_as_string(hide_password=False), preload=False) as memory, \
                    pytest.raises(StorageError, match=says) as caught:
                memory.add_memory("ana", "Lives in Lisbon")
            assert "truemem_" not in str(caught.value)
    finally:
        for database in (name, f"{name}_shut", f"{name}_priv"):
            services.drop_database(_postgres_admin_url, database)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')
            conn.execute(f'DROP ROLE IF EXISTS "{role}_out"')


def test_settings_from_environment() -> None:
    settings = Settings.from_env({"TRUEMEM_MEMORY_LIMIT": "300",
                                  "TRUEMEM_DEDUP_THRESHOLD": "0.9"}, search_k=3)
    assert (settings.memory_limit, settings.dedup_threshold, settings.search_k) == (300, 0.9, 3)
    with pytest.raises(InvalidInputError, match="TRUEMEM_MEMORY_LIMIT"):
        Settings.from_env({"TRUEMEM_MEMORY_LIMIT": "many"})
    with pytest.raises(InvalidInputError):
        Settings(dedup_threshold=1.5)


@pytest.mark.parametrize(("raw", "expected"), [
    ("true", True), ("1", True), ("Yes", True), ("on", True),
    ("false", False), ("0", False), ("no", False), (" OFF ", False)])
def test_a_flag_from_the_environment_reads_as_written(raw: str, expected: bool) -> None:
    """``bool("false")`` is True: a flag is read as a word, not cast."""
    assert Settings.from_env({"TRUEMEM_INT8_QUERIES": raw}).int8_queries is expected


def test_a_flag_or_a_name_that_is_not_one_is_a_typed_error() -> None:
    with pytest.raises(InvalidInputError, match="TRUEMEM_INT8_QUERIES='maybe'"):
        Settings.from_env({"TRUEMEM_INT8_QUERIES": "maybe"})
    with pytest.raises(InvalidInputError, match="no setting is named 'nope'"):
        Settings.parse("nope", "1")


@pytest.mark.parametrize(("old", "new"), [
    ("weight_neighbours", "weight_adjacent"), ("neighbour_seeds", "adjacent_seeds"),
    ("neighbour_span", "adjacent_span"), ("neighbour_window_s", "adjacent_window_s")])
def test_a_renamed_setting_is_a_typed_error_naming_the_new_one(
        old: str, new: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The time-window search channel is the adjacent channel now: its old setting
    names, as keywords or variables, say what to write instead and open nothing."""
    value = Settings.from_env({})
    for call in (lambda: Settings(**{old: 1}), lambda: value.replace(**{old: 1}),
                 lambda: Settings.from_env({}, **{old: 1}), lambda: Settings.parse(old, "1")):
        with pytest.raises(InvalidInputError, match=f"setting {old} is now named {new}$"):
            call()
    variable = f"TRUEMEM_{old.upper()}"
    with pytest.raises(InvalidInputError, match=f"{variable} is now named TRUEMEM_{new.upper()}"):
        Settings.from_env({variable: "1"})
    monkeypatch.setenv(variable, "1")
    with pytest.raises(InvalidInputError, match=variable):
        TrueMem(f"sqlite:///{tmp_path / 'a.db'}")
    assert not (tmp_path / "a.db").exists()


def test_int8_queries_reach_the_built_in_embedder(tmp_path: Path) -> None:
    with TrueMem(f"sqlite:///{tmp_path / 'a.db'}", settings=Settings(int8_queries=True),
                 preload=False) as memory:
        assert getattr(memory._core.embedder, "embed_queries", None) is not None
    with TrueMem(f"sqlite:///{tmp_path / 'b.db'}", preload=False) as memory:
        assert getattr(memory._core.embedder, "embed_queries", "absent") is None


def test_a_sqlite_file_replaced_under_a_store_is_refused(tmp_path: Path) -> None:
    """Its connections would go on serving (and writing) the file no one reads any more."""
    path = tmp_path / "store.db"
    with TrueMem(path) as memory:
        memory.add_memory("ana", "Lives in Lisbon")
        with sqlite3.connect(tmp_path / "other.db") as other:
            other.execute("CREATE TABLE t (x INTEGER)")
        os.replace(tmp_path / "other.db", path)
        for call in (lambda: memory.add_memory("ana", "Plays the cello"),
                     lambda: memory.list_memories("ana")):
            with pytest.raises(StorageError, match="deleted or replaced"):
                call()


def test_an_in_memory_store_runs_one_transaction_at_a_time() -> None:
    """An in-memory database is one connection: concurrent transactions (a background job
    beside a caller's read) take turns on it instead of nesting a BEGIN in another's."""

    async def run() -> list[int]:
        db = Database(resolve_url("sqlite:///:memory:"), embedder=None)
        table = Table("turns", MetaData(), Column("n", Integer))
        async with db.transaction() as conn:
            await conn.run_sync(table.metadata.create_all)

        async def write(n: int) -> None:
            async with db.transaction() as conn:
                await conn.execute(table.insert().values(n=n))
                await asyncio.sleep(0.01)  # another task runs meanwhile
                await conn.execute(table.insert().values(n=-n))

        try:
            await asyncio.gather(*(write(n) for n in range(1, 6)))
            async with db.autocommit() as conn:
                return [row.n for row in await conn.execute(select(table.c.n))]
        finally:
            await db.close()

    written = asyncio.run(run())
    assert len(written) == 10
    # each transaction's two rows are next to each other: none ran inside another
    assert all(written[i] == -written[i + 1] for i in range(0, 10, 2))
