"""The statements on a chat's path, run by the driver itself: SQLAlchemy builds them,
the driver runs them.

``get_context`` runs eight to ten small statements (``record`` one, on PostgreSQL), and
the event loop that serves every call spent a large share of its time in SQLAlchemy's
execution layer (execution context, result object, greenlet hop): on PostgreSQL
1.2–3.8 ms of CPU per ``get_context`` (``benchmarks/context_latency.py
--via-sqlalchemy``), and a ``record`` took 0.1–0.5 ms longer. The loop is what a call
waits for, so ``fetch_all`` compiles a statement once and then hands its SQL
and parameters straight to the driver (psycopg; on SQLite, TrueMem's aiosqlite
connection, one trip to its thread), with SQLAlchemy's own type processing on the
way in and out (``UTCDateTime``, the embeddings' binary parameters). Rows are
named tuples: ``row.id`` as before.

Only what is safe this way goes this way: statements returning rows (SELECTs, and
``record``'s write with its RETURNING on PostgreSQL, which runs on its own in
autocommit mode) whose columns have distinct names and whose SQL is final once
compiled, but for ``IN`` lists on SQLite (expanded here as SQLAlchemy does, the SQL
cached per list length; on PostgreSQL ``one_of`` binds an array). Anything else, and
every statement of an engine something listens to (``before_execute``,
``before_cursor_execute`` ...: tracing such as OpenTelemetry's, a test counting round
trips) runs through SQLAlchemy as usual. A driver error is raised as SQLAlchemy's
(``DBAPIError``), so callers see the same errors either way, and a lost connection is
handled by SQLAlchemy as on any other statement (see ``_on_psycopg``).
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import CompoundSelect, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

Query = Select[Any] | CompoundSelect[Any]


class _Compiled:
    """A statement's SQL, its parameters' values and converters, and its rows' maker."""

    __slots__ = ("compiled", "convert", "dialect", "expanding", "fixed", "rows", "shapes", "sql",
                 "types")

    def __init__(self, statement: Query, dialect: Dialect) -> None:
        self.compiled = statement.compile(dialect=dialect)
        self.dialect = dialect
        self.sql: str = self.compiled.string
        binds = self.compiled.bind_names  # parameter -> its name in the SQL
        self.expanding = tuple(name for bind, name in binds.items() if bind.expanding)
        # the values the statement holds itself (literals), which the caller does not bind
        self.fixed = {name: bind.effective_value for bind, name in binds.items()
                      if not bind.required}
        self.convert = {name: process for bind, name in binds.items()
                        if (process := bind.type.dialect_impl(dialect).bind_processor(dialect))}
        self.types = [column.type for column in statement.selected_columns]
        # per the columns' types as the server describes them (the same on every call)
        self.rows: dict[tuple[Any, ...], Callable[[list[tuple[Any, ...]]], list[Any]]] = {}
        # per the lengths of the IN lists: the SQL, and where each ``?`` takes its value
        self.shapes: dict[tuple[int, ...], tuple[str, list[tuple[str, int]]]] = {}

    def params(self, values: Mapping[str, Any]) -> dict[str, Any]:
        params = {**self.fixed, **values}
        for name, process in self.convert.items():
            if name in params:  # an IN list's processor is its items'
                params[name] = ([process(item) for item in params[name]]
                                if name in self.expanding else process(params[name]))
        return params

    def positional(self, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """For positional parameters (SQLite's ``?``): the SQL with each IN list expanded
        to its length, and the values in order."""
        lengths = tuple(len(params[name]) for name in self.expanding)
        if (shape := self.shapes.get(lengths)) is None:
            state = self.compiled.construct_expanded_state(params)
            item = {expanded: (name, n) for name, names in state.parameter_expansion.items()
                    for n, expanded in enumerate(names)}
            shape = self.shapes[lengths] = (state.statement, [
                item.get(name, (name, -1)) for name in state.positiontup or ()])
        sql, positions = shape
        return sql, [params[name] if n < 0 else params[name][n] for name, n in positions]

    def maker(self, description: Sequence[Any]) -> Callable[[list[tuple[Any, ...]]], list[Any]]:
        """What turns the driver's tuples into rows: named, each value processed as
        SQLAlchemy would."""
        key = tuple((column[0], column[1]) for column in description)  # name, type code
        if (made := self.rows.get(key)) is None:
            made = self.rows[key] = _maker(self.types, description, self.dialect)
        return made


# the engine events that see statements: a listener to any of them sees them all
_WATCHING = ("before_execute", "after_execute", "before_cursor_execute", "after_cursor_execute")

# per statement, per dialect: one process may serve a SQLite and a PostgreSQL store
_COMPILED: weakref.WeakKeyDictionary[Query, dict[str, _Compiled | None]] = (
    weakref.WeakKeyDictionary())


def _compiled(statement: Query, dialect: Dialect) -> _Compiled | None:
    """The statement compiled for the driver, or None if it must go through SQLAlchemy."""
    per_dialect = _COMPILED.setdefault(statement, {})
    try:
        return per_dialect[dialect.name]
    except KeyError:
        compiled = _Compiled(statement, dialect)
        names = [column.key for column in statement.selected_columns]
        # IN lists are expanded here only into positional parameters (PostgreSQL's
        # ``one_of`` binds an array instead)
        positional = compiled.compiled.positiontup is not None
        final = not any(bind.literal_execute or (bind.expanding and not positional)
                        for bind in compiled.compiled.binds.values())
        safe = final and not compiled.compiled.escaped_bind_names and len(set(names)) == len(names)
        per_dialect[dialect.name] = compiled if safe else None
        return per_dialect[dialect.name]


def _maker(
    types: Sequence[Any], description: Sequence[Any], dialect: Dialect
) -> Callable[[list[tuple[Any, ...]]], list[Any]]:
    row = namedtuple("Row", [column[0] for column in description])  # type: ignore[misc]
    processors = [kind.dialect_impl(dialect).result_processor(dialect, column[1])
                  for kind, column in zip(types, description, strict=True)]
    if not any(processors):
        return lambda found: [row._make(values) for values in found]
    return lambda found: [
        row._make([value if process is None else process(value)
                   for process, value in zip(processors, values, strict=True)])
        for values in found]


async def fetch_all(
    conn: AsyncConnection, statement: Query, params: Mapping[str, Any]
) -> Sequence[Any]:
    """The rows of ``statement`` with ``params``: straight through the driver when the
    statement allows it (see above), through SQLAlchemy otherwise."""
    sync = conn.sync_connection
    run = _RUNS.get(conn.dialect.name)
    compiled = (_compiled(statement, conn.dialect)
                if run is not None and sync is not None
                and not any(getattr(sync.dispatch, name) for name in _WATCHING) else None)
    if compiled is None or sync is None or run is None:
        return (await conn.execute(statement, params)).all()
    # the connection the pool gave (asking for it the async way costs a greenlet hop)
    raw = sync.connection if not sync.invalidated else await conn.get_raw_connection()
    found = await run(raw.driver_connection, compiled, compiled.params(params))
    if found is None:  # not run: see ``_on_psycopg``, ``_on_sqlite``
        return (await conn.execute(statement, params)).all()
    description, rows = found
    return compiled.maker(description)(rows)


_Found = tuple[Sequence[Any], list[tuple[Any, ...]]] | None


async def _on_psycopg(driver: Any, compiled: _Compiled, params: dict[str, Any]) -> _Found:
    import psycopg

    try:
        async with driver.cursor() as cursor:
            await cursor.execute(compiled.sql, params)
            return cursor.description or (), await cursor.fetchall()
    except psycopg.Error as exc:
        if driver.broken or driver.closed:
            # Lost: the statement fails again through SQLAlchemy, at once (psycopg knows;
            # nothing is sent, so a write is never sent twice), which then does what it
            # does on any lost connection: drops it and the pool's others, which the same
            # restart has most likely ended too.
            return None
        raise DBAPIError.instance(compiled.sql, None, exc, psycopg.Error) from exc


async def _on_sqlite(driver: Any, compiled: _Compiled, params: dict[str, Any]) -> _Found:
    import sqlite3

    fetch = getattr(driver, "fetch", None)  # TrueMem's aiosqlite connection (sqlite_driver)
    if fetch is None:
        return None
    sql, values = compiled.positional(params)
    try:
        description, rows = await fetch(sql, values)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, None, exc, sqlite3.Error) from exc
    return description or (), rows


_RUNS: dict[str, Callable[[Any, _Compiled, dict[str, Any]], Awaitable[_Found]]] = {
    "postgresql": _on_psycopg, "sqlite": _on_sqlite}
