"""Plain SQL on a test's store, through its own engine (never TrueMem's internals).

Tests that must look at rows no public API shows (job statuses, the summary
bookkeeping, admission rejections) or put a store in a state no API reaches
(a job back to pending, memories aged by months) open a short-lived synchronous
engine on ``memory.admin.database_url``. The async drivers are swapped for their
synchronous side: ``sqlite+aiosqlite`` becomes ``sqlite``; ``postgresql+psycopg``
is psycopg 3, which is synchronous too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Executable, Row, create_engine, func, select, table
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from truemem_core import TrueMem


def sync_url(database_url: str) -> str:
    """The synchronous SQLAlchemy URL of a store's (async) URL."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        url = url.set(drivername="sqlite")
    elif url.get_backend_name() == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    else:
        raise ValueError(f"not a TrueMem store URL: {database_url!r}")
    return url.render_as_string(hide_password=False)


def _url(store: TrueMem | str) -> str:
    return store.admin.database_url if isinstance(store, TrueMem) else store


@contextmanager
def connect(store: TrueMem | str) -> Iterator[Connection]:
    """One transaction on the store (committed on success), on a connection of its own."""
    url = sync_url(_url(store))
    options: dict[str, Any] = {"poolclass": NullPool}
    if url.startswith("sqlite"):
        options["connect_args"] = {"timeout": 30}  # wait for TrueMem's writer, as it does
    engine = create_engine(url, **options)
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()


def rows(store: TrueMem | str, statement: Executable) -> list[Row[Any]]:
    """The rows ``statement`` returns."""
    with connect(store) as conn:
        return list(conn.execute(statement).all())


def execute(store: TrueMem | str, statement: Executable) -> int:
    """Run ``statement`` and commit; the number of rows it changed."""
    with connect(store) as conn:
        result: Any = conn.execute(statement)
        return int(result.rowcount)


def row_counts(store: TrueMem | str, tables: Sequence[str]) -> dict[str, int]:
    """The number of rows of each of ``tables``."""
    with connect(store) as conn:
        return {name: int(conn.execute(select(func.count()).select_from(table(name)))
                          .scalar_one()) for name in tables}
