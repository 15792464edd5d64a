"""Many facts of one user in one transaction, each decided as ``write.add`` decides it.

``add_many`` walks a batch of candidates in order through the same decisions as
``write.add`` (``write.pick_duplicates``, ``closes``, ``admission_of``, ``fold``,
``maintenance.prune_events`` and the pruning selection): near-duplicates fold in,
contradicted facts close, admission control rejects, pruning archives past the soft
limit. It applies them to an in-memory copy of the user's memories (``_Ledger``:
every row, archived too, and their vectors as one matrix), loaded once under the
user's lock, so a later fact of the batch sees what the earlier ones did (two
near-duplicates in one batch end as one row), and then writes the outcome in a few
statements: the new rows, the changed rows, the deleted rows, the history events
and the admission rejections. The rows left are those adding the facts one by one
would leave; only similarities may differ in the last float bits (a matrix product
over the batch instead of one query per fact).

The copy costs about 1.5 KB of memory per stored memory of the user (384-dimension
vectors) for the length of one batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.memory import rows
from truemem_core.memory.env import MemoryEnv
from truemem_core.memory.maintenance import prune_events
from truemem_core.memory.pruning import PruneCandidate, select_for_pruning
from truemem_core.memory.write import (
    NEIGHBOURS,
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


@dataclass(slots=True)
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
    embedding: Vector
    embedding_model: str
    source_message_id: int | None
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    invalidated_at: datetime | None = None
    superseded_by: str | None = None


_COLUMNS = [memories.c[f.name] for f in fields(_Row)]
_CHANGING = ("text", "importance", "source", "state", "reinforcements", "embedding",
             "source_message_id", "updated_at", "valid_from", "valid_to", "invalidated_at",
             "superseded_by")
_UPDATE = memories.update().where(memories.c.id == bindparam("row_id")).values(
    {name: bindparam(f"new_{name}") for name in _CHANGING})


async def add_many(
    conn: AsyncConnection, env: MemoryEnv, user: str, batch: Sequence[Candidate], *, admit: bool
) -> list[Memory | None]:
    """``write.add`` of each candidate (all of ``user``) in order, written at the end.

    Each result is what ``write.add`` would have returned for that candidate: the
    memory as it stood right after it (None when admission rejected it).
    """
    if not batch:
        return []
    await env.db.lock_user(conn, user)
    stored = [_Row(**row._mapping) for row in await conn.execute(
        select(*_COLUMNS).where(memories.c.user_id == user))]
    ledger = _Ledger(env, stored, np.stack([c.vector for c in batch]))
    results = [ledger.add(n, new, admit=admit) for n, new in enumerate(batch)]
    await ledger.flush(conn, user)
    return results


class _Ledger:
    """The user's memories in memory while a batch is decided, and what changed."""

    def __init__(self, env: MemoryEnv, stored: list[_Row], vectors: Vector) -> None:
        self.env = env
        self.rows = {row.id: row for row in stored}
        self.live = {row.id: row for row in stored if row.state != "archived"}
        self.ids = [row.id for row in stored]  # matrix row -> memory id
        self.where = {row.id: n for n, row in enumerate(stored)}
        self.stored = len(stored)
        self.matrix = np.empty((len(stored) + len(vectors), vectors.shape[1]), np.float32)
        if stored:
            self.matrix[:len(stored)] = np.stack([row.embedding for row in stored])
        # every candidate against every stored vector, in one product
        self.base = vectors @ self.matrix[:len(stored)].T
        self.vectors = vectors
        self.alive = np.ones(len(self.matrix), bool)
        self.moved: set[int] = set()  # stored rows whose vector a merge changed
        self.new: list[str] = []
        self.changed: set[str] = set()
        self.deleted: set[str] = set()
        self.events: list[dict[str, Any]] = []
        self.rejections: list[dict[str, Any]] = []
        self.clock = utcnow() - timedelta(microseconds=1)

    def tick(self) -> datetime:
        """Now, strictly after the previous fact's now (the order pruning breaks ties by)."""
        self.clock = max(utcnow(), self.clock + timedelta(microseconds=1))
        return self.clock

    def nearest(self, n: int) -> list[tuple[str, float]]:
        """Candidate ``n``'s ``NEIGHBOURS`` nearest memories, archived too, best first."""
        size = len(self.ids)
        scores = np.empty(size, np.float32)
        scores[:self.stored] = self.base[n]
        vector = self.vectors[n]
        if self.moved:
            moved = np.fromiter(self.moved, int)
            scores[moved] = self.matrix[moved] @ vector
        scores[self.stored:] = self.matrix[self.stored:size] @ vector
        scores[~self.alive[:size]] = -np.inf
        top = np.arange(size) if size <= NEIGHBOURS else np.argpartition(
            -scores, NEIGHBOURS - 1)[:NEIGHBOURS]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in top if scores[i] > -np.inf]

    def add(self, n: int, new: Candidate, *, admit: bool) -> Memory | None:
        """``write.add`` of candidate ``n``, on the ledger."""
        settings = self.env.settings
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
        self.changed.add(row.id)

    def _log(self, events: list[dict[str, Any]], now: datetime) -> None:
        self.events.extend({**event, "created_at": now} for event in events)

    def _insert(self, new: Candidate, n: int, now: datetime) -> _Row:
        row = _Row(**new_row(new, str(uuid.uuid4()), self.env.model_name, now))
        self.where[row.id] = len(self.ids)
        self.matrix[len(self.ids)] = self.vectors[n]
        self.ids.append(row.id)
        self.rows[row.id] = self.live[row.id] = row
        self.new.append(row.id)
        self._log([added_event(new, row.id)], now)
        return row

    def _merge(self, duplicates: Sequence[_Row], new: Candidate, now: datetime) -> _Row:
        old, absorbed = duplicates[0], duplicates[1:]
        values, event = fold(duplicates, new, self.env.settings, now)
        self._set(old, values)
        if "embedding" in values:
            where = self.where[old.id]
            self.matrix[where] = values["embedding"]
            if where < self.stored:
                self.moved.add(where)
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
            self.alive[self.where[row.id]] = False
            self.moved.discard(self.where[row.id])
            del self.rows[row.id]
            self.live.pop(row.id, None)
            self.changed.discard(row.id)
            if row.id in self.new:
                self.new.remove(row.id)
            else:
                self.deleted.add(row.id)
        self._log(absorb_events(absorbed, into), now)

    def _supersede(
        self, superseded: dict[str, str], current: dict[str, Any], by: str, now: datetime
    ) -> None:
        if superseded:
            for memory_id in superseded:
                self._set(self.rows[memory_id], supersede_values(now, by))
            self._log(supersede_events(superseded, current, by), now)

    def _prune(self, now: datetime) -> None:
        limit = self.env.settings.memory_limit
        excess = len(self.live) - limit
        if excess <= 0:
            return
        victims = select_for_pruning(
            [PruneCandidate(r.id, r.importance, r.source, r.created_at)
             for r in self.live.values()],
            excess=excess, protected_importance=self.env.settings.protected_importance)
        pruned = [self.rows[i] for i in victims]
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
        changed = [self.rows[i] for i in self.changed if i not in new]
        if changed:
            await conn.execute(_UPDATE, [
                {"row_id": row.id, **{f"new_{name}": getattr(row, name) for name in _CHANGING}}
                for row in changed])
        if self.deleted:
            await conn.execute(memories.delete().where(
                memories.c.user_id == user, memories.c.id.in_(sorted(self.deleted))))
        if self.events:
            await conn.execute(memory_events.insert(), [
                rows.event_row(user_id=user, **event) for event in self.events])
        if self.rejections:
            await conn.execute(admission_rejections.insert(), self.rejections)
