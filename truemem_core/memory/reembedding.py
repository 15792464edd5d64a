"""Re-embedding: every stored vector recomputed with another model, resumable.

The tables that store vectors are those of the schema with an ``embedding`` column;
``TEXTS`` names the text each embeds (a test checks that none is missing). Every
such row names the model that made its vector (``embedding_model``; NULL for
messages embedded before migration 0018). A vector is stale when its row names
another model, or none. ``reembed`` (``memory.service``) walks the stale rows of
each table by id, a batch at a time, each batch committed on its own: a run killed
midway left the rows it did in the new model's space, and the next run skips them.
The store adopts the new model only in the transaction that finds none left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy import Column, ColumnElement, Table, and_, bindparam, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.storage import vector_indexes
from truemem_core.storage.database import Database
from truemem_core.storage.schema import memories, messages, passages, syntheses

TEXTS: dict[Table, Column[Any]] = {memories: memories.c.text, messages: messages.c.content,
                                   passages: passages.c.content, syntheses: syntheses.c.text}


def stale(table: Table, model: str) -> ColumnElement[bool]:
    """Rows of ``table`` with a vector some other model made (or an unknown one)."""
    return and_(table.c.embedding.is_not(None),
                or_(table.c.embedding_model.is_(None), table.c.embedding_model != model))


async def remaining(conn: AsyncConnection, model: str) -> int:
    """How many stored vectors are not ``model``'s, over every table."""
    counts = [await conn.scalar(select(func.count()).where(stale(table, model)))
              for table in TEXTS]
    return sum(count or 0 for count in counts)


async def next_stale(
    conn: AsyncConnection, table: Table, model: str, after: Any, size: int
) -> list[tuple[Any, str]]:
    """(id, text) of up to ``size`` stale rows of ``table`` after id ``after``, by id."""
    statement = select(table.c.id, TEXTS[table]).where(stale(table, model))
    if after is not None:
        statement = statement.where(table.c.id > after)
    rows = await conn.execute(statement.order_by(table.c.id).limit(size))
    return [(row[0], row[1]) for row in rows]


async def store(
    conn: AsyncConnection, table: Table, found: Sequence[tuple[Any, str]], vectors: Vector,
    model: str,
) -> None:
    """Replace the vectors of ``found`` in one batch; a row whose text changed since it
    was read keeps its vector (still stale: the next pass takes it)."""
    if found:
        await conn.execute(
            table.update().where(table.c.id == bindparam("row_id"),
                                 TEXTS[table] == bindparam("embedded"))
            .values(embedding=bindparam("vector"), embedding_model=model),
            [{"row_id": row_id, "embedded": text, "vector": vector}
             for (row_id, text), vector in zip(found, vectors, strict=True)])


async def run(
    db: Database, embed: Callable[[list[str]], Awaitable[Vector]], model: str,
    dimension: int, *, batch: int, report: Callable[[int, int], None],
) -> int:
    """Re-embed every stale vector with ``embed`` (``model``); how many were recomputed.
    Rows written meanwhile by a process on the old model are taken by another pass."""
    async with db.transaction(readonly=True) as conn:
        total = await remaining(conn, model)
    if total and db.dialect == "postgresql":  # set_embedder makes them again, once
        async with db.transaction() as conn:
            await vector_indexes.drop(conn)
    done = 0
    while True:
        for table in TEXTS:
            after = None
            while True:
                async with db.transaction(readonly=True) as conn:
                    found = await next_stale(conn, table, model, after, batch)
                if not found:
                    break
                vectors = await embed([text for _, text in found])
                async with db.transaction() as conn:
                    await store(conn, table, found, vectors, model)
                after, done = found[-1][0], done + len(found)
                report(done, max(total, done))
        async with db.transaction() as conn:
            if not await remaining(conn, model):
                await db.set_embedder(conn, model, dimension)
                return done
