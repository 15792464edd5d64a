"""Retrieval counts: one background writer per instance, every user's counts in one
transaction a few times a second, none lost while the instance is open.

* Users retrieved within one pause are written in one transaction, one UPDATE.
* ``settle`` (``drain``, ``close``) writes at once, without the pause.
* Over many concurrent calls, the stored counts equal what the calls served.
* ``erase_user`` racing the writer leaves nothing of the user and raises nothing.
* A failed write keeps its counts for the next; superseded memories are not counted.
* Two writers locking the same users in opposite orders never deadlock.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from db_access import execute, rows
from sqlalchemy import event, select, update
from sqlalchemy.engine import Engine

from truemem_core import Settings, StorageError, TrueMem
from truemem_core.conversation import retrieval_counts
from truemem_core.records import Context
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import memories, memory_events, utcnow

FACTS = ["Lives in Porto", "Works as a nurse", "Plays the guitar", "Allergic to peanuts",
         "Has a sister named Zoe", "Runs a marathon every spring", "Drinks coffee black"]
ASKS = ["where do I live?", "what is my job?", "which music do I play?", "what can't I eat?",
        "who is my sister?", "what sport do I do?", "how do I take my coffee?", "hello"]


def settle(memory: TrueMem) -> None:
    """``Conversation.settle`` alone (``drain`` also looks at the jobs)."""
    memory._loop.run(memory._core.conversation.counts.settle())


def stored(memory: TrueMem) -> dict[tuple[str, str], int]:
    """(user, memory id) -> retrievals, of the memories counted at least once."""
    return {(row.user_id, row.id): row.retrievals for row in rows(
        memory, select(memories.c.user_id, memories.c.id, memories.c.retrievals))
        if row.retrievals}


def served(contexts: list[Context]) -> Counter[tuple[str, str]]:
    return Counter((c.user_id, hit.memory.id) for c in contexts for hit in c.memories)


def add_facts(memory: TrueMem, users: list[str]) -> None:
    for user in users:
        for fact in FACTS:
            memory.add_memory(user, fact)


@pytest.fixture
def memory(store_url: str) -> Any:
    with TrueMem(store_url, settings=Settings(dedup_threshold=1.0, admission_threshold=0.0)
                 ) as opened:
        yield opened


def sent_during(work: Callable[[], None]) -> tuple[list[str], int]:
    """The statements (BEGIN/COMMIT aside) and the number of commits ``work()`` sent."""
    sent: list[str] = []
    commits: list[None] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement.split()[0].upper())

    def committed(conn: Any) -> None:
        commits.append(None)

    event.listen(Engine, "before_cursor_execute", seen)
    event.listen(Engine, "commit", committed)
    try:
        work()
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
        event.remove(Engine, "commit", committed)
    return [s for s in sent if s not in ("BEGIN", "COMMIT")], len(commits)


def test_users_retrieved_within_one_pause_are_written_in_one_transaction(
    memory: TrueMem, backend: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retrieval_counts, "COUNTS_EVERY_S", 600.0)  # nothing written unless settled
    users = ["ana", "bob", "cy", "dee"]
    add_facts(memory, users)
    contexts = [memory.get_context(user, "s", ask) for user in users for ask in ASKS[:3]]
    assert stored(memory) == {}  # waiting for the pause to end
    began = time.perf_counter()
    sent, commits = sent_during(lambda: settle(memory))
    assert time.perf_counter() - began < 10  # settle does not wait out the pause
    # PostgreSQL: every user's lock in one statement, then one UPDATE; SQLite's
    # BEGIN IMMEDIATE is the lock
    assert sent == (["SELECT", "UPDATE"] if backend == "postgres" else ["UPDATE"]), sent
    assert commits == 1
    assert {user for user, _ in served(contexts)} == set(users)
    assert stored(memory) == dict(served(contexts))


@pytest.mark.parametrize("seed", [1, 2])
def test_counts_over_many_concurrent_calls_equal_what_was_served(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch, seed: int,
) -> None:
    monkeypatch.setattr(retrieval_counts, "COUNTS_EVERY_S", 0.02)  # many writes during the calls
    rng = random.Random(seed)
    users = ["ana", "bob", "cy"]
    add_facts(memory, users)
    memory.add_memory("quiet", "Lives in Berlin")  # never retrieved

    async def calls() -> list[Context]:
        contexts: list[Context] = []
        for _ in range(6):
            contexts += await asyncio.gather(*(
                memory.aget_context(rng.choice(users), f"s{rng.randint(1, 3)}",
                                    " and ".join(rng.sample(ASKS, rng.randint(1, 3))))
                for _ in range(rng.randint(1, 8))))
            if rng.random() < 0.5:
                await memory.adrain()
            else:
                await asyncio.sleep(rng.choice([0.0, 0.01, 0.05]))
        return contexts

    contexts = asyncio.run(calls())
    memory.drain()
    assert stored(memory) == dict(served(contexts))
    assert sum(served(contexts).values()) > 20  # the calls did serve memories


def test_erase_user_racing_the_writer_leaves_nothing_of_the_user(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(retrieval_counts, "COUNTS_EVERY_S", 0.0)  # writing all the time
    add_facts(memory, ["ana", "bob"])

    async def race() -> list[Any]:
        calls: list[Awaitable[Any]] = [
            memory.aget_context(user, "s", ask) for ask in ASKS for user in ("ana", "bob")]
        calls.insert(len(calls) // 2, memory.aerase_user("ana"))
        return list(await asyncio.gather(*calls))

    held = len(memory.list_memories("ana"))

    with caplog.at_level(logging.WARNING, logger="truemem.conversation"):
        done = asyncio.run(race())
        memory.drain()
    assert not caplog.records
    assert held in done  # what erase_user returned
    assert memory.list_memories("ana") == []
    for table in (memories, memory_events):
        assert rows(memory, select(table.c.id).where(table.c.user_id == "ana")) == []
    contexts = [c for c in done if isinstance(c, Context) and c.user_id == "bob"]
    assert stored(memory) == dict(served(contexts))


def test_a_failed_write_keeps_its_counts_for_the_next(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    add_facts(memory, ["ana"])
    store = memory._core.memories
    real = store.touch
    failures = [StorageError("database error: the server is gone")]

    async def flaky(counts: Any) -> None:
        if failures:
            raise failures.pop()
        await real(counts)

    monkeypatch.setattr(store, "touch", flaky)
    first = memory.get_context("ana", "s", "where do I live?")
    with caplog.at_level(logging.WARNING, logger="truemem.conversation"):
        settle(memory)
    assert "could not count a retrieval" in caplog.text
    assert stored(memory) == {}
    second = memory.get_context("ana", "s", "where do I live?")
    settle(memory)
    assert stored(memory) == dict(served([first, second]))


def test_memories_superseded_before_the_write_are_not_counted(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retrieval_counts, "COUNTS_EVERY_S", 600.0)
    add_facts(memory, ["ana"])
    context = memory.get_context("ana", "s", "where do I live and work?")
    first, *rest = [hit.memory.id for hit in context.memories]
    assert rest
    assert execute(memory, update(memories).where(memories.c.id == first)
                   .values(valid_to=utcnow())) == 1
    settle(memory)
    assert stored(memory) == {("ana", i): 1 for i in rest}
    untouched = memory.get_memory("ana", rest[0])
    assert untouched.state == "active"


def test_two_writers_locking_many_users_in_any_order_never_deadlock(store_url: str) -> None:
    users = [f"user{n}" for n in range(6)]

    async def hold(db: Database, order: list[str]) -> None:
        async with db.transaction() as conn:
            await db.lock_users(conn, order)
            await asyncio.sleep(0.002)  # both hold some locks and want the other's

    async def writers() -> None:
        dbs = [Database(resolve_url(store_url), embedder=None) for _ in range(2)]
        try:
            for _ in range(20):
                await asyncio.gather(hold(dbs[0], users), hold(dbs[1], users[::-1]))
        finally:
            for db in dbs:
                await db.close()

    asyncio.run(asyncio.wait_for(writers(), 60))  # PostgreSQL would report a deadlock
