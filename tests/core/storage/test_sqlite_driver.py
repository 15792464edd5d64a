"""The SQLite driver's cursor, as each SQLAlchemy release's aiosqlite adapter uses it."""

from __future__ import annotations

from pathlib import Path

from truemem_core.storage import sqlite_driver


async def test_a_cursor_works_taken_as_it_comes_and_awaited(tmp_path: Path) -> None:
    """SQLAlchemy 2.1's adapter uses ``cursor()`` as it comes; 2.0's awaits it (the
    project allows both: a LlamaIndex pgvector user is held to 2.0)."""
    connection = await sqlite_driver.connect(str(tmp_path / "t.db"))
    try:
        plain = connection.cursor()
        awaited = await connection.cursor()
        await plain.execute("CREATE TABLE t (n INTEGER)")
        await awaited.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
        assert awaited.rowcount == 2
        await plain.execute("SELECT n FROM t ORDER BY n")
        assert await plain.fetchall() == [(1,), (2,)]
    finally:
        await connection.close()
