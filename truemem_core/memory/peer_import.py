"""``PeerImport``: memories brought over from another memory system (mem0, LangMem).

Each record becomes a memory of its user the way a new fact does (embedded with this
store's embedder, deduplicated against the user's memories and the file's other
records, scored by admission control), keeping its own creation and update times,
and is kept as a store item at its origin's namespace and key: a second import of
the same file finds every item there and writes nothing. Records are written in
batches, each one transaction under the user's lock (memories, times and items
together): an import killed midway and run again ends as one that was not, and two
runs of one file at once import each record once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_created_first, check_instant, check_recorded
from truemem_core.memory import bulk, items
from truemem_core.memory.service import BATCH, MemoryService, check_batch_size
from truemem_core.records import Memory
from truemem_core.storage.schema import memories, store_items, utcnow


@dataclass(frozen=True, slots=True)
class PeerRecord:
    """One memory of another system: its user, where it lived, its text and times."""

    user_id: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    text: str
    created_at: datetime | None = None
    updated_at: datetime | None = None

    # The rules of a record's parts, for the parsers of other systems' exports
    # (``truemem import``), which name the record and field in each error.
    @staticmethod
    def check_time(value: Any, what: str) -> datetime:
        """A time a record was created or updated at: aware, with a UTC equivalent, and
        no later than now."""
        return check_recorded(check_instant(value, what), what)

    @staticmethod
    def check_times(created: datetime | None, updated: datetime | None) -> None:
        """``created`` no later than ``updated``."""
        check_created_first(created, updated)

    @staticmethod
    def check_value(value: Any, what: str) -> dict[str, Any]:
        """A JSON object that a store item can keep, as a plain dict (copied)."""
        return items.check_value(value, what)


@dataclass(slots=True)
class ImportReport:
    """What an import did (or, in a dry run, would do), record by record."""

    read: int = 0
    skipped: int = 0  # imported before (its origin's namespace and key are stored)
    added: int = 0  # became a new memory
    merged: int = 0  # folded into a memory the user had, or one an earlier record made
    rejected: int = 0  # admission control's verdict: not worth keeping
    users: dict[str, int] = field(default_factory=dict)  # records to import, per user


def _fresh(records: Sequence[PeerRecord]) -> list[PeerRecord]:
    """The first record of each (user, namespace, key): a file naming one twice counts once."""
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    kept = []
    for record in records:
        where = (record.user_id, record.namespace, record.key)
        if where not in seen:
            seen.add(where)
            kept.append(record)
    return kept


def timestamps(records: Sequence[PeerRecord]) -> dict[str, datetime]:
    """A new memory's times from the records it was made of: the earliest creation, the
    latest update."""
    created = [r.created_at for r in records if r.created_at is not None]
    updated = [r.updated_at for r in records if r.updated_at is not None]
    found: dict[str, datetime] = {}
    if created:
        found.update(created_at=min(created), valid_from=min(created))
    if updated or created:
        found["updated_at"] = max([*updated, *created])
    return found


class PeerImport:
    def __init__(self, memories: MemoryService) -> None:
        self.memories = memories
        self.db = memories.db

    async def run(
        self, records: Sequence[PeerRecord], *, dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None, batch_size: Any = BATCH,
    ) -> ImportReport:
        size = check_batch_size(batch_size)
        report = ImportReport(read=len(records))
        by_user: dict[str, list[PeerRecord]] = {}
        for record in _fresh(records):
            by_user.setdefault(self.memories.check_user(record.user_id), []).append(record)
        todo: dict[str, list[PeerRecord]] = {}
        for user, mine in by_user.items():
            async with self.db.transaction(readonly=True) as conn:
                known = await _stored(conn, user, mine)
            todo[user] = [r for r in mine if _where(r) not in known]
            report.users[user] = len(todo[user])
        report.skipped = report.read - sum(report.users.values())
        if dry_run:
            return report
        total, done = sum(report.users.values()), 0
        for user, mine in todo.items():
            def step(n: int, before: int = done) -> None:
                if progress:
                    progress(before + n, total)
            await self._import(user, mine, report, size, step)
            done += len(mine)
        return report

    async def _import(
        self, user: str, records: list[PeerRecord], report: ImportReport, size: int,
        progress: Callable[[int], None],
    ) -> None:
        """The records of ``user`` batch by batch, each batch one transaction: its
        memories, their times and the records' items commit together, so a run that
        is killed leaves whole batches, and running it again carries on after them."""
        facts = await self.memories.facts(user, [r.text for r in records])
        known: bulk.Known = {}
        done = 0
        async with contextlib.aclosing(
                bulk.embedded(self.memories.embed, facts, size)) as batches:
            async for ready in batches:
                batch = records[done:done + len(ready)]
                async with self.db.writing(user) as conn:
                    # another run of the same file may have imported them meanwhile
                    taken = await _stored(conn, user, batch)
                    mine = [(r, c) for r, c in zip(batch, ready, strict=True)
                            if _where(r) not in taken]
                    report.skipped += len(batch) - len(mine)
                    report.users[user] -= len(batch) - len(mine)
                    before = {i for (i,) in await conn.execute(
                        select(memories.c.id).where(memories.c.user_id == user))}
                    made = await bulk.add_many(conn, self.memories.deps, user,
                                               [c for _, c in mine], admit=True, known=known)
                    kept = [r for r, _ in mine]
                    await _date(conn, user, _sources(kept, made, before, report))
                    await _keep(conn, user, kept, made)
                done += len(ready)
                progress(done)


def _where(record: PeerRecord) -> tuple[str, str]:
    """Where a record is kept: its origin's namespace (joined) and key."""
    return items.joined(record.namespace), record.key


def _sources(
    records: Sequence[PeerRecord], made: Sequence[Memory | None], before: set[str],
    report: ImportReport,
) -> dict[str, list[PeerRecord]]:
    """Each memory a batch made, with the records it was made of (counted in ``report``:
    added, merged or rejected). A record restating a memory the batch found (the user's,
    or one an earlier batch made) leaves that memory's times as a restatement does."""
    sources: dict[str, list[PeerRecord]] = {}
    for record, memory in zip(records, made, strict=True):
        if memory is None:
            report.rejected += 1
        elif memory.id in before or memory.id in sources:
            report.merged += 1
        else:
            report.added += 1
        if memory is not None and memory.id not in before:
            sources.setdefault(memory.id, []).append(record)
    return sources


async def _stored(
    conn: AsyncConnection, user: str, records: Sequence[PeerRecord]
) -> set[tuple[str, str]]:
    """Which of the records' (namespace, key) the user's items already hold."""
    wanted = [_where(r) for r in records]
    found: set[tuple[str, str]] = set()
    for start in range(0, len(wanted), 500):
        found.update((row.namespace, row.key) for row in await conn.execute(
            select(store_items.c.namespace, store_items.c.key).where(
                store_items.c.user_id == user,
                tuple_(store_items.c.namespace, store_items.c.key).in_(
                    wanted[start:start + 500]))))
    return found


async def _date(conn: AsyncConnection, user: str, sources: dict[str, list[PeerRecord]]) -> None:
    """Give each new memory the times of the records it was made of."""
    for memory_id, records in sources.items():
        values = timestamps(records)
        if values:
            await conn.execute(memories.update().where(
                memories.c.user_id == user, memories.c.id == memory_id).values(**values))


async def _keep(
    conn: AsyncConnection, user: str, records: Sequence[PeerRecord],
    made: Sequence[Memory | None],
) -> None:
    """Each record as a store item at its origin's namespace and key, indexed by the
    memory it became (none when admission rejected it)."""
    if not records:
        return  # (an INSERT of no rows would write one of defaults)
    now = utcnow()
    await conn.execute(store_items.insert(), [
        {"user_id": user, "namespace": items.joined(r.namespace), "key": r.key,
         "value": r.value, "memory_id": None if m is None else m.id,
         "created_at": r.created_at or now, "updated_at": r.updated_at or r.created_at or now}
        for r, m in zip(records, made, strict=True)])
