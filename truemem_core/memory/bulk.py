"""Many facts of one user in one transaction, each decided as ``write.add`` decides it.

``add_many`` walks a batch of candidates in order through the same decisions as
``write.add`` (``write.pick_duplicates``, ``closes``, ``admission_of``, ``fold``,
``maintenance.prune_events`` and the pruning selection): near-duplicates fold in,
contradicted facts close, admission control rejects, pruning archives past the soft
limit. It applies them to an in-memory copy of the user's memories (``_Ledger``:
every row, archived too, and each candidate's cosine to each of them), read once
under the user's lock, so a later fact of the batch sees what the earlier ones did
(two near-duplicates in one batch end as one row), and then writes the outcome in a
few statements: the new rows, the changed rows (one UPDATE per set of columns), the
deleted rows, the history events and the admission rejections. The rows left are
those adding the facts one by one would leave; only similarities may differ in the
last float bits (a matrix product over the batch instead of one query per fact).

The caller keeps the user's vectors from one batch to the next (``Known``): about
1.5 KB per stored memory of the user (384 dimensions) for the length of the call,
and 4 bytes per candidate and memory for the cosines of one batch.
"""

from __future__ import annotations

import asyncio
import heapq
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.graph import erasure as graph_erasure
from truemem_core.graph.superseded import end_with_their_memories
from truemem_core.memory import items, rows
from truemem_core.memory.deps import MemoryDeps
from truemem_core.memory.lifecycle import is_protected
from truemem_core.memory.maintenance import prune_events
from truemem_core.memory.pruning import PruneCandidate, prune_order
from truemem_core.memory.write import (
    NEAREST,
    Candidate,
    absorb_events,
    added_event,
    admission_of,
    closes,
    fold,
    new_row,
    pick_duplicates,
    rejection_row,
    supersede_events,
    supersede_values,
)
from truemem_core.records import Memory
from truemem_core.storage.schema import admission_rejections, memories, memory_events, utcnow


@dataclass(slots=True, eq=False)
class _Row:
    """A memory row as the write path reads and changes it."""

    id: str
    user_id: str
    text: str
    importance: int
    kind: Any
    source: Any
    state: Any
    reinforcements: int
    embedding_model: str
    source_message_id: int | None
    created_at: datetime
    updated_at: datetime
    valid_to: datetime | None = None
    superseded_by: str | None = None
    feedback: int = 0
    valid_from: datetime | None = None
    # never read, only written (a stored row's stays as it is unless set here)
    invalidated_at: datetime | None = None
    embedding: Vector = field(kw_only=True)


# what a batch reads, in _Row's order; the vectors come apart (see ``_load``)
_COLUMNS = [memories.c[f.name] for f in fields(_Row)
            if f.name not in ("embedding", "invalidated_at")]


def _update(columns: Sequence[str]) -> Any:
    """UPDATE of ``columns`` by id, for an executemany (only what changed: on SQLite a
    new text re-indexes the row for full-text search)."""
    return memories.update().where(memories.c.id == bindparam("row_id")).values(
        {name: bindparam(f"new_{name}") for name in columns})


# A vector as a batch left it: (updated_at, embedding_model, vector) by memory id. Every
# write that changes a vector also sets updated_at (a merge, an edit) or the model (re-embedding).
Known = dict[str, tuple[datetime, str, Vector]]


async def add_many(
    conn: AsyncConnection, deps: MemoryDeps, user: str, batch: Sequence[Candidate], *,
    admit: bool, known: Known,
) -> list[Memory | None]:
    """``write.add`` of each candidate (all of ``user``) in order, written at the end.

    Each result is what ``write.add`` would have returned for that candidate: the
    memory as it stood right after it (None when admission rejected it). ``known``:
    the vectors the previous batch left, read again only where a row changed since;
    updated in place for the next batch. The caller's transaction holds the user's
    lock (``Database.writing``): no row changes between the reads of ``_load``.
    """
    if not batch:
        return []
    stored = await _load(conn, user, known)
    # pure work, a few hundred microseconds a fact: off the event loop (see language.offload)
    ledger, results = await asyncio.to_thread(_decide, deps, stored, batch, admit)
    await ledger.flush(conn, user)
    # relations of the graph whose memories this batch closed end with them
    await end_with_their_memories(conn, user, {m.id for m in results if m}, utcnow())
    known.clear()
    known.update((r.id, (r.updated_at, r.embedding_model, r.embedding))
                 for r in ledger.rows.values())
    return results


async def embedded(
    embed: Callable[[Sequence[str]], Awaitable[Vector]], facts: Sequence[Candidate], size: int,
) -> AsyncGenerator[list[Candidate]]:
    """``facts`` in batches of ``size``, with their vectors (by ``embed``); the next batch
    is embedded while the caller writes this one."""
    batches = [facts[i:i + size] for i in range(0, len(facts), size)]
    embedding = asyncio.ensure_future(embed([f.text for f in batches[0]])) if batches else None
    try:
        for n, batch in enumerate(batches):
            assert embedding is not None
            vectors = await embedding
            embedding = None if n + 1 == len(batches) else asyncio.ensure_future(
                embed([f.text for f in batches[n + 1]]))
            yield [replace(f, vector=v) for f, v in zip(batch, vectors, strict=True)]
    finally:
        if embedding is not None:
            embedding.cancel()


def _decide(
    deps: MemoryDeps, stored: list[_Row], batch: Sequence[Candidate], admit: bool
) -> tuple[_Ledger, list[Memory | None]]:
    ledger = _Ledger(deps, stored, np.stack([c.vector for c in batch]))
    return ledger, [ledger.add(n, new, admit=admit) for n, new in enumerate(batch)]


async def _load(conn: AsyncConnection, user: str, known: Known) -> list[_Row]:
    """Every memory of ``user``, archived too, with its vector (from ``known`` where
    the row has not changed since)."""
    found = (await conn.execute(select(*_COLUMNS).where(memories.c.user_id == user))).all()
    stale = [row.id for row in found if known.get(row.id, (None, None))[:2]
             != (row.updated_at, row.embedding_model)]
    vectors = {i: v for i, (_, _, v) in known.items()}
    if stale:
        scope = (memories.c.user_id == user if len(stale) == len(found)
                 else memories.c.id.in_(stale))
        vectors.update((row.id, row.embedding) for row in await conn.execute(
            select(memories.c.id, memories.c.embedding).where(scope)))
    # in _Row's order; a row deleted between the two reads is not there (none is: every
    # deleter takes the user's lock first)
    return [_Row(*row, embedding=vectors[row.id]) for row in found if row.id in vectors]


def _order(row: _Row) -> tuple[int, datetime, str]:
    return prune_order(PruneCandidate(row.id, row.importance, row.source, row.created_at))


class _Ledger:
    """The user's memories in memory while a batch is decided, and what changed."""

    def __init__(self, deps: MemoryDeps, stored: list[_Row], vectors: Vector) -> None:
        self.deps = deps
        self.rows = {row.id: row for row in stored}
        self.live = {row.id: row for row in stored if row.state != "archived"}
        # the live rows in the order pruning takes them (``pruning.select_for_pruning``'s,
        # kept as they change, since pruning runs after every insert); stale entries are
        # skipped when they come up
        self.queue = [(_order(row), row.id) for row in self.live.values()]
        heapq.heapify(self.queue)
        self.ids = [row.id for row in stored]  # column of ``scores`` -> memory id
        self.where = {row.id: n for n, row in enumerate(stored)}
        # every candidate's cosine to every memory, stored ones in one product; a column
        # is computed again when its memory's vector changes, added for a new memory
        self.scores = np.empty((len(vectors), len(stored) + len(vectors)), np.float32)
        if stored:
            self.scores[:, :len(stored)] = vectors @ np.stack([r.embedding for r in stored]).T
        self.vectors = vectors
        self.new: list[str] = []
        self.changed: dict[str, set[str]] = {}  # stored row -> columns changed
        self.deleted: dict[str, str] = {}  # absorbed id -> the memory it was folded into
        self.events: list[dict[str, Any]] = []
        self.rejections: list[dict[str, Any]] = []
        self.clock = utcnow() - timedelta(microseconds=1)

    def tick(self) -> datetime:
        """Now, strictly after the previous fact's now (the order pruning breaks ties by)."""
        self.clock = max(utcnow(), self.clock + timedelta(microseconds=1))
        return self.clock

    def nearest(self, n: int) -> list[tuple[str, float]]:
        """Candidate ``n``'s ``NEAREST`` nearest memories, archived too, best first."""
        size = len(self.ids)
        scores = self.scores[n, :size]
        top = np.arange(size) if size <= NEAREST else np.argpartition(
            -scores, NEAREST - 1)[:NEAREST]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[i], score) for i, score in zip(
            top.tolist(), scores[top].tolist(), strict=True) if score > -np.inf]

    def _score(self, column: int, vector: Vector | None) -> None:
        """Column ``column`` of ``scores`` for ``vector``, or out of reach (None: gone)."""
        self.scores[:, column] = -np.inf if vector is None else self.vectors @ vector

    def add(self, n: int, new: Candidate, *, admit: bool) -> Memory | None:
        """``write.add`` of candidate ``n``, on the ledger."""
        settings = self.deps.settings
        nearest = self.nearest(n)
        duplicates = pick_duplicates(
            [self.rows[i] for i, score in nearest if score >= settings.dedup_threshold],
            new.text)
        folded = {row.id for row in duplicates}
        current = {i: self.live[i] for i in dict.fromkeys([*(i for i, _ in nearest),
                                                           *new.supersedes])
                   if i not in folded and i in self.live and self.live[i].valid_to is None}
        superseded, spared = closes(new, current)
        now = self.tick()
        if duplicates:
            merged = self._merge(duplicates, new, now)
            self._supersede(superseded, current, merged.id, now)
            return rows.to_memory(merged)
        if admit:
            admission = admission_of(new, nearest, superseded, spared, settings)
            if not admission.admitted:
                self.rejections.append(rejection_row(new, admission, now))
                return None
        row = self._insert(new, n, now)
        self._supersede(superseded, current, row.id, now)
        self._prune(now)
        return rows.to_memory(row)

    # -- the changes, as write.py makes them in SQL --------------------------------

    def _set(self, row: _Row, values: dict[str, Any]) -> None:
        for name, value in values.items():
            setattr(row, name, value)
        if row.state == "archived":
            self.live.pop(row.id, None)
        else:
            self.live[row.id] = row
            heapq.heappush(self.queue, (_order(row), row.id))
        self.changed.setdefault(row.id, set()).update(values)

    def _log(self, events: list[dict[str, Any]], now: datetime) -> None:
        self.events.extend({**event, "created_at": now} for event in events)

    def _insert(self, new: Candidate, n: int, now: datetime) -> _Row:
        row = _Row(**new_row(new, str(uuid.uuid4()), self.deps.model_name, now))
        self.where[row.id] = len(self.ids)
        self._score(len(self.ids), self.vectors[n])
        self.ids.append(row.id)
        self.rows[row.id] = self.live[row.id] = row
        heapq.heappush(self.queue, (_order(row), row.id))
        self.new.append(row.id)
        self._log([added_event(new, row.id)], now)
        return row

    def _merge(self, duplicates: Sequence[_Row], new: Candidate, now: datetime) -> _Row:
        old, absorbed = duplicates[0], duplicates[1:]
        values, event = fold(duplicates, new, self.deps.settings, now)
        self._set(old, values)
        if "embedding" in values:
            self._score(self.where[old.id], values["embedding"])
        self._log([event], now)
        if absorbed:
            self._absorb(absorbed, old.id, now)
        return old

    def _absorb(self, absorbed: Sequence[_Row], into: str, now: datetime) -> None:
        gone = {row.id for row in absorbed}
        for row in self.rows.values():
            if row.superseded_by in gone:
                self._set(row, {"superseded_by": into})
        for row in absorbed:
            self._score(self.where[row.id], None)
            del self.rows[row.id]
            self.live.pop(row.id, None)
            self.changed.pop(row.id, None)
            if row.id in self.new:
                self.new.remove(row.id)
            else:
                self.deleted[row.id] = into
        self._log(absorb_events(absorbed, into), now)

    def _supersede(
        self, superseded: dict[str, str], current: dict[str, Any], by: str, now: datetime
    ) -> None:
        if superseded:
            for memory_id in superseded:
                self._set(self.rows[memory_id], supersede_values(now, by))
            self._log(supersede_events(superseded, current, by), now)

    def _prune(self, now: datetime) -> None:
        limit = self.deps.settings.memory_limit
        excess = len(self.live) - limit
        if excess <= 0:
            return
        protected = self.deps.settings.protected_importance
        pruned: list[_Row] = []
        while len(pruned) < excess and self.queue:
            order, memory_id = heapq.heappop(self.queue)
            row = self.live.get(memory_id)
            if (row is not None and row not in pruned and order == _order(row)
                    and not is_protected(row.importance, row.source,
                                         protected_importance=protected)):
                pruned.append(row)
        for row in pruned:
            self._set(row, {"state": "archived", "updated_at": now})
        self._log(prune_events(pruned, limit), now)

    # -- the writes --------------------------------------------------------------------

    async def flush(self, conn: AsyncConnection, user: str) -> None:
        """Write what the batch changed: a handful of statements, whatever its size."""
        if self.new:
            await conn.execute(memories.insert(), [
                {f.name: getattr(self.rows[i], f.name) for f in fields(_Row)}
                for i in self.new])
        new = set(self.new)
        groups: dict[tuple[str, ...], list[_Row]] = {}
        for memory_id, names in self.changed.items():
            if memory_id not in new:
                groups.setdefault(tuple(sorted(names)), []).append(self.rows[memory_id])
        for columns, changed in groups.items():
            await conn.execute(_update(columns), [
                {"row_id": row.id, **{f"new_{name}": getattr(row, name) for name in columns}}
                for row in changed])
        if self.deleted:
            await conn.execute(memories.delete().where(
                memories.c.user_id == user, memories.c.id.in_(sorted(self.deleted))))
            await items.repoint(conn, user, self.deleted)
            await graph_erasure.repoint_memories(conn, user, self.deleted)
        if self.events:
            await conn.execute(memory_events.insert(), [
                rows.event_row(user_id=user, **event) for event in self.events])
        if self.rejections:
            await conn.execute(admission_rejections.insert(), self.rejections)
