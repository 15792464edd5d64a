"""Draining what ``record`` queued costs the same per message however long the user's
history: maintenance runs when due, not after every exchange, and ``drain`` asks
about a few jobs a poll, not the whole backlog (docs/operations.md, "What runs per
message")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from db_access import execute, rows
from sqlalchemy import Engine, event, select, update

from truemem_core import Settings, TrueMem
from truemem_core.errors import InvalidInputError
from truemem_core.storage.schema import jobs, memories, utcnow


def test_a_burst_of_exchanges_queues_one_maintenance(memory: TrueMem) -> None:
    """Maintenance reads every memory of the user: one run for the burst, not one per
    exchange (the old rule queued five here)."""
    for n in range(5):
        memory.record("ana", "s1", f"I bought plant number {n} today", "Lovely!")
    memory.drain(timeout=120)
    kinds = [row.kind for row in rows(memory, select(jobs.c.kind).where(
        jobs.c.user_id == "ana"))]
    assert kinds.count("extract") == 5
    assert kinds.count("maintain") == 1


def test_maintenance_is_queued_again_once_due(store_url: str) -> None:
    settings = Settings(maintain_interval_s=600)
    with TrueMem(store_url, settings=settings) as memory:
        first = memory.record("ana", "s1", "I live in Lisbon and I work at Siemens", "Nice!")
        assert [k for k in first.jobs if k.startswith("maintain:")]
        memory.drain(timeout=120)
        soon = memory.record("ana", "s1", "I play the cello in an orchestra", "Lovely!")
        assert not [k for k in soon.jobs if k.startswith("maintain:")]
        memory.drain(timeout=120)
        unscored = {row.id for row in rows(memory, select(memories.c.id).where(
            memories.c.user_id == "ana", memories.c.dynamic_score.is_(None)))}
        assert unscored  # the cello came after the maintenance
        execute(memory, update(jobs).where(jobs.c.kind == "maintain").values(
            created_at=utcnow() - timedelta(seconds=601)))  # the interval passes
        due = memory.record("ana", "s1", "My sister Marta lives in Porto", "Good to know.")
        assert [k for k in due.jobs if k.startswith("maintain:")]
        memory.drain(timeout=120)
        still = {row.id for row in rows(memory, select(memories.c.id).where(
            memories.c.user_id == "ana", memories.c.dynamic_score.is_(None)))}
        assert not still & unscored  # everything the burst stored is scored now


def test_another_users_maintenance_does_not_count(memory: TrueMem) -> None:
    memory.record("ana", "s1", "I live in Lisbon", "Nice!")
    other = memory.record("bob", "s1", "I live in Oslo", "Nice!")
    assert [k for k in other.jobs if k.startswith("maintain:")]


def test_drain_asks_about_a_few_jobs_a_poll(memory: TrueMem) -> None:
    """A backlog of 150 extractions: each poll names 64 jobs at most, and drain still
    returns only once every one is done."""
    polled: list[int] = []

    def seen(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().startswith("SELECT jobs.") and "IN (" in statement:
            polled.append(len(parameters) - 1)  # the keys, and the status

    turns = [pair for n in range(150) for pair in (
        ("user", f"I visited museum number {n} in Madrid"), ("assistant", f"Noted {n}."))]
    event.listen(Engine, "before_cursor_execute", seen)
    try:
        memory.record_messages("ana", "s1", turns)
        memory.drain(timeout=600)
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert polled and max(polled) <= 64, polled
    left = rows(memory, select(jobs.c.key).where(jobs.c.status != "done"))
    assert left == []


@pytest.mark.parametrize("interval", [-1.0, float("nan"), float("inf")])
def test_a_maintain_interval_is_a_number_of_seconds(interval: float) -> None:
    with pytest.raises(InvalidInputError, match="maintain_interval_s"):
        Settings(maintain_interval_s=interval)
