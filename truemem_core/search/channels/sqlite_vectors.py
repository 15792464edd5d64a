"""SQLite: a user's message (passage) vectors kept in memory between searches.

Reading a user's vectors from the file cost what the history holds: at 20,000 past
messages, 150 ms of a ``get_context`` to read 30 MB of rows, where the product with the
query took about 1 ms. So the rows are read once and kept as one matrix per (table, user),
and each search checks them against the file, in its own transaction, by a summary of
the user's vectors read from an index (migration 0024: the ids of the rows with a
vector): their count, the sum and the largest of their ids. A vector is written once
per row (a re-embedding rewrites them all, and a process searching with the old model
meanwhile is stopped and started again with the new one: docs/operations.md); a new
row has an id above every other, so a
summary that only grew by rows after the largest is topped up with those rows, and
any other change (a row deleted, a late one embedded) reads the user's rows again.
Several processes on one file each keep their own, each checked against the file.

Scores are exact (the product with every vector of the user's): the search ranks the
user's rows, then asks the database which of the best pass the corpus's conditions
(not in the session's recent window, not searched by passages), widening until ``k``
do. What grows with the history is the product, at about 0.06 ms per 1,000 rows.
At most ``BUDGET`` bytes of vectors are kept per process, the least recently searched
users' given up first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, Select, Table, bindparam, func, select, type_coerce
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import NullType

from truemem_core.embeddings import Vector
from truemem_core.search.channels import Corpus, built, fetch_rows, one_of

BUDGET = 512 * 2**20
_FIRST = 32  # candidates tested against the corpus's conditions beyond k, at first


@dataclass(frozen=True, slots=True)
class _Summary:
    count: int
    total: int
    last: int


@dataclass(frozen=True, slots=True)
class _Vectors:
    summary: _Summary
    ids: np.ndarray[Any, np.dtype[np.int64]]  # ascending
    matrix: np.ndarray[Any, np.dtype[np.float32]]


class UserVectors:
    """The cache of one store (``SQLiteChannels``)."""

    def __init__(self, budget: int = BUDGET) -> None:
        self._kept: OrderedDict[Hashable, _Vectors] = OrderedDict()
        self._budget = budget
        self._bytes = 0

    async def nearest(self, conn: AsyncConnection, corpus: Corpus, query: Vector, k: int
                      ) -> list[tuple[Any, float]]:
        """The corpus's ``k`` rows most similar to ``query``: (id, cosine), best first,
        ties by id."""
        kept = await self._current(conn, corpus, len(query))
        if not len(kept.ids):
            return []
        scores = np.einsum("ij,j->i", kept.matrix, np.asarray(query, dtype=np.float32))
        tested = np.zeros(len(scores), dtype=bool)
        passing: list[int] = []
        wanted = k + _FIRST
        while True:
            # the best ``wanted`` and every row tied with the last of them
            floor = np.partition(scores, len(scores) - wanted)[-wanted] \
                if wanted < len(scores) else -np.inf
            fresh = np.flatnonzero((scores >= floor) & ~tested)
            tested[fresh] = True
            ids = [int(i) for i in kept.ids[fresh]]
            # padded (an id twice is the same test): few lengths, few statements to cache
            ids += ids[-1:] * (-len(ids) % _FIRST)
            rows = await fetch_rows(conn, corpus, built(corpus, _passing),
                                    corpus.bind(candidates=ids))
            passing += [row.id for row in rows]
            if len(passing) >= k or tested.all():
                break
            wanted *= 4
        where = np.searchsorted(kept.ids, passing)
        best = [(passing[i], float(scores[where[i]])) for i in range(len(passing))]
        best.sort(key=lambda hit: (-hit[1], hit[0]))
        return best[:k]

    async def _current(self, conn: AsyncConnection, corpus: Corpus, dimension: int) -> _Vectors:
        key = (corpus.table.name, corpus.user_id, dimension)
        row = (await fetch_rows(conn, corpus, built(corpus, _summary),
                                {"vectors_user": corpus.user_id}))[0]
        summary = _Summary(int(row.count), int(row.total or 0), int(row.last or 0))
        kept = self._kept.get(key)
        if kept is None or kept.summary != summary:
            kept = await self._topped_up(conn, corpus, dimension, kept, summary)
        self._keep(key, kept)
        return kept

    async def _topped_up(self, conn: AsyncConnection, corpus: Corpus, dimension: int,
                         kept: _Vectors | None, summary: _Summary) -> _Vectors:
        """``kept`` with the rows after its last, if that makes ``summary``; else read anew."""
        if kept is not None and summary.count > kept.summary.count:
            ids, matrix = await self._read(conn, corpus, dimension, kept.summary.last)
            grown = _Summary(kept.summary.count + len(ids), kept.summary.total + int(ids.sum()),
                             int(ids[-1]) if len(ids) else kept.summary.last)
            if grown == summary:
                return _Vectors(summary, np.concatenate([kept.ids, ids]),
                                np.concatenate([kept.matrix, matrix]))
        ids, matrix = await self._read(conn, corpus, dimension, None)
        return _Vectors(summary, ids, matrix)

    async def _read(self, conn: AsyncConnection, corpus: Corpus, dimension: int,
                    after: int | None) -> tuple[Any, Any]:
        params: dict[str, Any] = {"vectors_user": corpus.user_id}
        if after is not None:
            params["vectors_after"] = after
        rows = await fetch_rows(conn, corpus, built(corpus, _rows, after is not None), params)
        ids = np.fromiter((row.id for row in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(row.embedding for row in rows), dtype=np.float32)
        return ids, matrix.reshape(len(rows), dimension)

    def _keep(self, key: Hashable, kept: _Vectors) -> None:
        if (before := self._kept.pop(key, None)) is not None:  # kept meanwhile by another call
            self._bytes -= before.matrix.nbytes
        self._kept[key] = kept
        self._bytes += kept.matrix.nbytes
        while self._bytes > self._budget and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            self._bytes -= dropped.matrix.nbytes


def _embedded(table: Table) -> list[Any]:
    """The user's rows with a vector: what migration 0024's index holds."""
    return [table.c.user_id == bindparam("vectors_user"), table.c.embedding.is_not(None)]


def _summary(corpus: Corpus) -> Select[Any]:
    table = corpus.table
    count: ColumnElement[Any] = func.count()
    return select(count.label("count"), func.sum(table.c.id).label("total"),
                  func.max(table.c.id).label("last")).where(*_embedded(table))


def _rows(corpus: Corpus, after: bool) -> Select[Any]:
    table = corpus.table
    stmt = select(table.c.id, type_coerce(table.c.embedding, NullType).label("embedding")
                  ).where(*_embedded(table)).order_by(table.c.id)
    return stmt.where(table.c.id > bindparam("vectors_after")) if after else stmt


def _passing(corpus: Corpus) -> Select[Any]:
    """Which of the ``candidates`` pass the corpus's conditions."""
    return select(corpus.table.c.id).where(one_of(corpus.table.c.id, "candidates"),
                                           *corpus.where)
