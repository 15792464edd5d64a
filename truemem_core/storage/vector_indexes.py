"""PostgreSQL: the HNSW indexes conversation recall searches past messages and passages
with (``search.channels.postgres``, docs/search.md).

pgvector indexes only vectors of a fixed dimension, and the columns are ``vector``
without one (one store, one embedder, of any dimension): each index is on the
expression ``embedding::vector(D)``, D the dimension of the store's embedder, and the
search orders by that same expression. D is known once the store records its embedder,
so the indexes are made then (``Database``), by migration 0024 on a store that already
recorded one, and again by ``set_embedder`` after a re-embedding (which drops them
first: a vector of another dimension cannot enter them). A store without them searches
exactly, as ``exact_recall`` does.
"""

from __future__ import annotations

from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.storage.schema import messages, passages

TABLES: tuple[Table, ...] = (messages, passages)


def name(table: Table) -> str:
    return f"ix_{table.name}_embedding_hnsw"


def indexed(table: Table, dimension: int) -> str:
    """The indexed expression, as the search writes it."""
    return f"({table.name}.embedding::vector({int(dimension)}))"


BUILD = "m = 32, ef_construction = 128"
"""Denser than pgvector's defaults (16, 64), which found 73-87 % of the exact search's
ten best on the benchmark's histories (``benchmarks/recall_scaling.py``, whose lines
repeat about 75 times each): histories repeat themselves ("Thanks!", the same question
asked again), and identical vectors fill each other's lists of neighbours; these found
92 %."""


def create_sql(table: Table, dimension: int) -> str:
    return (f"CREATE INDEX IF NOT EXISTS {name(table)} ON {table.name} USING hnsw "
            f"((embedding::vector({int(dimension)})) vector_cosine_ops) WITH ({BUILD})")


def drop_sql(table: Table) -> str:
    return f"DROP INDEX IF EXISTS {name(table)}"


async def create(conn: AsyncConnection, dimension: int, *, replace: bool = False) -> None:
    """Index the stored vectors of ``dimension``; ``replace``: an index there already (of
    another dimension, maybe) is made again."""
    for table in TABLES:
        if replace:
            await conn.exec_driver_sql(drop_sql(table))
        await conn.exec_driver_sql(create_sql(table, dimension))


async def drop(conn: AsyncConnection) -> None:
    for table in TABLES:
        await conn.exec_driver_sql(drop_sql(table))
