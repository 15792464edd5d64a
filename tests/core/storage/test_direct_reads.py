"""The statements on a chat's path run by the driver directly (``storage.direct``, issue
#13): psycopg on PostgreSQL, TrueMem's aiosqlite connection on SQLite.

* A context and a search read directly equal those read through SQLAlchemy
  (which every statement goes through while something listens to the engine).
* Rows carry what SQLAlchemy's types make of the values (aware UTC datetimes).
* ``record``'s one statement on PostgreSQL writes what it writes through SQLAlchemy.
* A failed read is a ``StorageError`` in words, and its connection serves the next; a
  lost connection is dropped, not handed out again.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from typing import Any

import pytest
from sqlalchemy import Integer, String, bindparam, event, func, literal, select, text
from sqlalchemy.exc import DBAPIError

from truemem_core import Settings, StorageError, TrueMem
from truemem_core.conversation import sessions
from truemem_core.memory import reads
from truemem_core.storage import direct
from truemem_core.storage.direct import fetch_all

WORDS = ["peanuts", "allergy", "sister", "Zoe", "Porto", "nurse", "guitar", "marathon",
         "Berlin", "jazz", "piano", "sushi", "vegan", "coffee", "hiking", "garden", "Lisbon"]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + "."


@pytest.fixture
def store(store_url: str) -> Iterator[TrueMem]:
    """A user with memories (some critical) and two sessions of embedded messages."""
    rng = random.Random(5)
    # maintained after every exchange: ana's records queue the same jobs as a new user's
    with TrueMem(store_url, settings=Settings(dedup_threshold=1.0, admission_threshold=0.0,
                                              recent_messages=6, maintain_interval_s=0)) as memory:
        for n in range(40):
            memory.add_memory("ana", sentence(rng), importance=5 if n % 10 == 0 else 3)
        for session in ("past", "now"):
            memory.record_messages("ana", session, [
                (rng.choice(["user", "assistant"]), sentence(rng)) for _ in range(30)])
        memory.drain(timeout=120)
        yield memory


@contextmanager
def direct_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of rows each direct read returned meanwhile."""
    seen: list[int] = []
    maker = direct._Compiled.maker

    def counted(self: Any, description: Any) -> Any:
        make = maker(self, description)
        return lambda found: seen.append(len(found)) or make(found)

    with monkeypatch.context() as patch:
        patch.setattr(direct._Compiled, "maker", counted)
        yield seen


@contextmanager
def listened(memory: TrueMem) -> Iterator[None]:
    """Something listening to the engine's statements (as tracing would)."""
    def listener(*args: Any) -> None:
        pass

    engine = memory._core.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield
    finally:
        event.remove(engine, "before_cursor_execute", listener)


def served(memory: TrueMem, message: str) -> tuple[Any, ...]:
    context = memory.get_context("ana", "now", message)
    memory._loop.run(memory._core.conversation.counts.settle())  # retrieval counts written
    return (context.memories, context.recalled, context.critical, context.recent_messages,
            context.summary, memory.search("ana", message))


def test_contexts_and_searches_read_directly_equal_sqlalchemy_s(
    store: TrueMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    for message in [sentence(rng) for _ in range(6)] + ["Portto guitr", "who is Zoe?"]:
        with direct_reads(monkeypatch) as seen:
            directly = served(store, message)
        # every read of a context and of a search (critical: nothing in ``seen`` would
        # mean the comparison below compares SQLAlchemy with itself)
        assert len(seen) >= 11 and sum(seen) > 0
        with direct_reads(monkeypatch) as seen, listened(store):
            through_sqlalchemy = served(store, message)
        assert seen == []
        assert directly == through_sqlalchemy
        hits, turns, critical, recent = directly[0], *directly[1:4]
        assert hits and turns and critical and recent
        for when in ([hit.memory.created_at for hit in hits]
                     + [turn.created_at for turn in turns]
                     + [memory.updated_at for memory in critical]
                     + [message.created_at for message in recent]):
            assert when.tzinfo == UTC


def test_rows_carry_sqlalchemy_s_types(store: TrueMem, monkeypatch: pytest.MonkeyPatch) -> None:
    core = store._core
    statements = [(reads._CRITICAL, {"user": "ana", "limit": 10}),
                  (sessions._RECENT, {"user": "ana", "session": "now", "recent": 6})]

    async def both() -> None:
        async with core.db.autocommit() as conn:
            with direct_reads(monkeypatch) as seen:
                read = [await fetch_all(conn, statement, params)
                        for statement, params in statements]
            assert seen == [4, 6]  # both read directly
            for mine, (statement, params) in zip(read, statements, strict=True):
                theirs = (await conn.execute(statement, params)).all()
                assert [tuple(row) for row in mine] == [tuple(row) for row in theirs]
                assert [type(v) for row in mine for v in row] == [
                    type(v) for row in theirs for v in row]
                assert mine[0]._fields == tuple(theirs[0]._fields)

    store._loop.run(both())


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_record_writes_directly_on_postgres(
    store: TrueMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``record``'s one statement runs on the driver too, and writes what it writes
    through SQLAlchemy: the messages, and jobs of the same kinds."""
    def recorded(user: str) -> tuple[Any, ...]:
        said = store.record(user, "later", "I moved to Porto last spring", "How exciting!")
        state = store.sessions.get(user, "later")
        return ([(m.role, m.content, m.tokens) for m in state.recent],
                [key.partition(":")[0] for key in said.jobs], said)

    with direct_reads(monkeypatch) as seen:
        *directly, said = recorded("ana")
    assert seen[0] == 2 + len(said.jobs) >= 4  # its rows: the two ids and the job keys
    with direct_reads(monkeypatch) as seen, listened(store):
        *through_sqlalchemy, _ = recorded("bob")
    assert seen == []
    assert directly == through_sqlalchemy


def test_a_failed_read_is_a_storage_error_and_its_connection_serves_the_next(
    store: TrueMem, backend: str,
) -> None:
    core = store._core
    # a value the statement cannot take: a division by zero (PostgreSQL), JSON that is
    # not JSON (SQLite, whose division by zero is NULL)
    failing, good, bad, words = (
        (select((literal(1) / bindparam("arg", type_=Integer)).label("n")), 1, 0,
         "the database rejected a value") if backend == "postgres" else
        (select(func.json(bindparam("arg", type_=String)).label("n")), "1", "{",
         "the database could not run a statement"))

    async def fail() -> None:
        with pytest.raises(StorageError) as failed:
            async with core.db.autocommit() as conn:
                try:
                    await fetch_all(conn, failing, {"arg": bad})
                finally:
                    assert not conn.invalidated
                    assert [row.n for row in await fetch_all(conn, failing, {"arg": good})] == [
                        good]
        assert str(failed.value) == f"database error: {words}"
        assert isinstance(failed.value.__cause__, DBAPIError)

    store._loop.run(fail())


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_lost_connection_is_not_handed_out_again(store: TrueMem) -> None:
    core = store._core
    whose = select(func.pg_backend_pid().label("pid"))

    async def lose() -> None:
        with pytest.raises(StorageError, match="unreachable or the connection was lost"):
            async with core.db.autocommit() as conn:
                pid = (await fetch_all(conn, whose, {}))[0].pid
                async with core.db.autocommit() as other:
                    await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
                try:
                    await fetch_all(conn, whose, {})
                finally:
                    assert conn.invalidated
        async with core.db.autocommit() as conn:
            assert (await fetch_all(conn, whose, {}))[0].pid != pid

    store._loop.run(lose())
    assert store.get_context("ana", "now", "Porto").critical
