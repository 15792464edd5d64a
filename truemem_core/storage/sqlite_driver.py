"""aiosqlite with one trip to its thread per statement.

aiosqlite runs each connection's calls on a thread of its own, one call per trip,
and SQLAlchemy makes four trips per statement (open a cursor, execute, fetch the
rows, close the cursor) and one more when it hands a connection back (a ROLLBACK
even when nothing was begun). A trip is a queue put, a thread wake-up and a
wake-up of the event loop.

Here a cursor executes, fetches every row and closes in one trip (SQLAlchemy
buffers every row of an aiosqlite result anyway), and a rollback with no
transaction open stays on the loop: a call makes one trip per statement.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Sequence
from functools import partial
from typing import Any

import aiosqlite

_Outcome = tuple[Any, list[Any], int, int | None]


class _Cursor:
    """What SQLAlchemy's aiosqlite adapter uses of a cursor, one trip per execute."""

    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self._rows: list[Any] = []

    def __await__(self) -> Generator[Any, None, _Cursor]:
        """SQLAlchemy 2.0's adapter awaits ``cursor()`` (2.1's uses it as it comes)."""
        return self._itself().__await__()

    async def _itself(self) -> _Cursor:
        return self

    async def __aenter__(self) -> _Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> _Cursor:
        self._take(await self._connection.run(_execute, sql, parameters, many=False))
        return self

    async def executemany(self, sql: str, parameters: Sequence[Sequence[Any]]) -> _Cursor:
        self._take(await self._connection.run(_execute, sql, parameters, many=True))
        return self

    def _take(self, outcome: _Outcome) -> None:
        self.description, self._rows, self.rowcount, self.lastrowid = outcome

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def close(self) -> None:
        return None  # the sqlite3 cursor was closed in the trip that used it


def _execute(connection: sqlite3.Connection, sql: str, parameters: Any, *,
             many: bool) -> _Outcome:
    """On the connection's thread: the statement, its rows and counts, cursor closed."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(sql, parameters)
        else:
            cursor.execute(sql, parameters)
        rows = cursor.fetchall() if cursor.description else []
        return cursor.description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


class Connection(aiosqlite.Connection):
    def cursor(self) -> _Cursor:  # type: ignore[override]  # an async context, as SQLAlchemy uses it
        return _Cursor(self)

    async def run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """``function(sqlite3_connection, *args, **kwargs)`` on the connection's thread."""
        call = partial(function, self._conn, *args, **kwargs)
        return await self._execute(call)  # type: ignore[no-untyped-call]  # aiosqlite's queue

    async def fetch(self, sql: str, parameters: Sequence[Any]) -> tuple[Any, list[Any]]:
        """A statement's description and rows, in one trip (``storage.direct``)."""
        description, rows, _, _ = await self.run(_execute, sql, parameters, many=False)
        return description, rows

    async def rollback(self) -> None:
        if self.in_transaction:  # nothing begun, nothing to undo: no trip
            await super().rollback()


async def connect(database: str, **kwargs: Any) -> aiosqlite.Connection:
    """As ``aiosqlite.connect``, with one trip per statement; the thread is a daemon (as
    SQLAlchemy makes aiosqlite's), so an unclosed store never holds up the interpreter."""
    connection = Connection(partial(sqlite3.connect, database, **kwargs), iter_chunk_size=64)
    connection._thread.daemon = True
    return await connection
