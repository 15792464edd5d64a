"""The reads on a chat's path, run by psycopg itself: SQLAlchemy builds them, psycopg runs them.

``get_context`` runs eight small statements, and on PostgreSQL the event loop
that serves every call spent a large share of its time in SQLAlchemy's execution
layer (execution context, result object, greenlet hop): 1.2–3.8 ms of CPU per
call (``benchmarks/context_latency.py --via-sqlalchemy``). The loop is what a
call waits for, so ``fetch_all`` compiles a statement once and then hands
its SQL and parameters straight to the connection's psycopg connection, with
SQLAlchemy's own type processing on the way in and out (``UTCDateTime``,
pgvector's binary parameters). Rows are named tuples: ``row.id`` as before.

Only what is safe this way goes this way: SELECTs on PostgreSQL whose SQL is
final once compiled (no ``IN`` list expanded per call) and whose columns have
distinct names. Anything else, every statement on SQLite, and every statement
of an engine something listens to (``before_execute``, ``before_cursor_execute``
...: tracing such as OpenTelemetry's, a test counting round trips) runs through
SQLAlchemy as usual. A driver error is raised as SQLAlchemy's (``DBAPIError``),
so callers see the same errors either way, and a lost connection is handled by
SQLAlchemy as on any other statement (see ``fetch_all``).
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import CompoundSelect, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

Query = Select[Any] | CompoundSelect[Any]


class _Compiled:
    """A statement's SQL, its parameters' values and converters, and its rows' maker."""

    __slots__ = ("compiled", "convert", "dialect", "fixed", "rows", "sql", "types")

    def __init__(self, statement: Query, dialect: Dialect) -> None:
        self.compiled = statement.compile(dialect=dialect)
        self.dialect = dialect
        self.sql: str = self.compiled.string
        binds = self.compiled.bind_names  # parameter -> its name in the SQL
        # the values the statement holds itself (literals), which the caller does not bind
        self.fixed = {name: bind.effective_value for bind, name in binds.items()
                      if not bind.required}
        self.convert = {name: process for bind, name in binds.items()
                        if (process := bind.type.dialect_impl(dialect).bind_processor(dialect))}
        self.types = [column.type for column in statement.selected_columns]
        # per the columns' types as the server describes them (the same on every call)
        self.rows: dict[tuple[Any, ...], Callable[[list[tuple[Any, ...]]], list[Any]]] = {}

    def params(self, values: Mapping[str, Any]) -> dict[str, Any]:
        params = {**self.fixed, **values}
        for name, process in self.convert.items():
            if name in params:
                params[name] = process(params[name])
        return params

    def maker(self, description: Sequence[Any]) -> Callable[[list[tuple[Any, ...]]], list[Any]]:
        """What turns the driver's tuples into rows: named, each value processed as
        SQLAlchemy would."""
        key = tuple((column.name, column.type_code) for column in description)
        if (made := self.rows.get(key)) is None:
            made = self.rows[key] = _maker(self.types, description, self.dialect)
        return made


# the engine events that see statements: a listener to any of them sees them all
_WATCHING = ("before_execute", "after_execute", "before_cursor_execute", "after_cursor_execute")

_COMPILED: weakref.WeakKeyDictionary[Query, _Compiled | None] = weakref.WeakKeyDictionary()


def _compiled(statement: Query, dialect: Dialect) -> _Compiled | None:
    """The statement compiled for psycopg, or None if it must go through SQLAlchemy."""
    try:
        return _COMPILED[statement]
    except KeyError:
        compiled = _Compiled(statement, dialect)
        names = [column.key for column in statement.selected_columns]
        final = not any(bind.expanding or bind.literal_execute
                        for bind in compiled.compiled.binds.values())
        safe = final and not compiled.compiled.escaped_bind_names and len(set(names)) == len(names)
        _COMPILED[statement] = compiled if safe else None
        return _COMPILED[statement]


def _maker(
    types: Sequence[Any], description: Sequence[Any], dialect: Dialect
) -> Callable[[list[tuple[Any, ...]]], list[Any]]:
    row = namedtuple("Row", [column.name for column in description])  # type: ignore[misc]
    processors = [kind.dialect_impl(dialect).result_processor(dialect, column.type_code)
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
    """The rows of ``statement`` with ``params``: on PostgreSQL straight through psycopg
    when the statement allows it (see above), through SQLAlchemy otherwise."""
    sync = conn.sync_connection
    compiled = (_compiled(statement, conn.dialect)
                if conn.dialect.name == "postgresql" and sync is not None
                and not any(getattr(sync.dispatch, name) for name in _WATCHING) else None)
    if compiled is None or sync is None:
        return (await conn.execute(statement, params)).all()
    import psycopg

    bound = compiled.params(params)
    # the connection the pool gave (asking for it the async way costs a greenlet hop)
    raw = sync.connection if not sync.invalidated else await conn.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    try:
        async with driver.cursor() as cursor:
            await cursor.execute(compiled.sql, bound)
            found = await cursor.fetchall()
            description = cursor.description or ()
    except psycopg.Error as exc:
        if driver.broken or driver.closed:
            # Lost: the statement fails again through SQLAlchemy, at once (psycopg knows),
            # which then does what it does on any lost connection: drops it and the
            # pool's others, which the same restart has most likely ended too.
            return (await conn.execute(statement, params)).all()
        raise DBAPIError.instance(compiled.sql, None, exc, psycopg.Error) from exc
    return compiled.maker(description)(found)
