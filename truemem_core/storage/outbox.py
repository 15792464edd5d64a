"""The ``jobs`` table: work written with the data it concerns, in the same statement or transaction.

A job is a row (key, kind, user, payload, status) before it is a broker
message; the broker only carries the key. Whatever happens to the broker,
the row says what is still to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.storage.schema import jobs, utcnow

JobKind = Literal["extract", "embed", "summarize", "maintain", "synthesize"]


@dataclass(frozen=True, slots=True)
class Job:
    key: str
    kind: JobKind
    payload: dict[str, Any] = field(default_factory=dict, compare=False)


async def get(conn: AsyncConnection, key: str) -> Any:
    """The job's row, or None."""
    return (await conn.execute(select(jobs).where(jobs.c.key == key))).first()


async def finish(conn: AsyncConnection, key: str) -> bool:
    """Mark a job done if it is still pending; False means someone else finished it."""
    result = await conn.execute(
        jobs.update().where(jobs.c.key == key, jobs.c.status == "pending")
        .values(status="done", updated_at=utcnow()))
    return bool(result.rowcount)


async def fail(conn: AsyncConnection, key: str, *, attempts: int, error: str, final: bool) -> None:
    """Count a failed attempt; ``final`` gives up on the job."""
    await conn.execute(jobs.update().where(jobs.c.key == key).values(
        attempts=attempts, last_error=error, status="failed" if final else "pending",
        updated_at=utcnow()))


async def pending(conn: AsyncConnection, *, untouched_since: datetime, limit: int) -> list[Job]:
    """Pending jobs not touched since ``untouched_since``, oldest first (for the sweep)."""
    found = await conn.execute(
        select(jobs.c.key, jobs.c.kind)
        .where(jobs.c.status == "pending", jobs.c.updated_at <= untouched_since)
        .order_by(jobs.c.created_at).limit(limit))
    return [Job(row.key, row.kind) for row in found]


async def unfinished(conn: AsyncConnection, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` are still pending."""
    if not keys:
        return set()
    found = await conn.execute(
        select(jobs.c.key).where(jobs.c.key.in_(list(keys)), jobs.c.status == "pending"))
    return {row.key for row in found}
