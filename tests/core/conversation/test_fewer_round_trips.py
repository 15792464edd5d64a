"""Retrieval and record in fewer round trips, with the same answers (issue #13).

* ``Channels.lexical`` runs both lexical channels (and the statistics they need) in
  one statement on PostgreSQL; on random stores, with filters, over memories and past
  messages, it returns exactly what the two channels return one by one.
* ``record`` writes the session, its messages and its jobs in one statement on
  PostgreSQL, outside a transaction (one round trip).
* A search reads its hits' rows in the adjacent channel's statement: the same hits, scores
  and rows as a read by id, and no statement more when it looks for adjacent rows.
* A read of one statement (get_memory, list_memories, history, a job's row) runs on its
  own; the drivers' connections are in autocommit mode on both databases, and a
  transaction is TrueMem's own BEGIN ... COMMIT, still one.
* SQLite: one trip to aiosqlite's thread per statement.
* ``search`` embeds its query while its lexical channels run.
* The query-embedding cache never returns another text's vector; a message
  ``get_context`` embedded is not embedded again by its extraction job.
* ``get_context`` builds each of its statements once, not per call, and reads its
  message for terms once; PostgreSQL plans each prepared statement once per connection.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite
import numpy as np
import pytest
from db_access import rows
from recording_embedder import RecordingEmbedder
from sqlalchemy import CompoundSelect, Select, event, func, select, update
from sqlalchemy.engine import Engine

from truemem_core import MiniLMEmbedder, Settings, StorageError, TrueMem, default_embedder
from truemem_core.memory import service
from truemem_core.search import adjacent, hybrid, query_text
from truemem_core.search.channels import channels_for_dialect, memories_of, past_turns_of
from truemem_core.search.filters import make_filters
from truemem_core.search.fusion import Fused
from truemem_core.search.query_text import keyword_terms, significant_terms
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import jobs, memories, messages

WORDS = ["peanuts", "allergy", "sister", "Zoe", "Porto", "nurse", "guitar", "marathon",
         "Berlin", "jazz", "piano", "sushi", "vegan", "coffee", "hiking", "garden", "Lisbon",
         "Python", "teacher", "daughter", "wedding", "greenhouse", "ceremony", "dentist"]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + "."


@pytest.fixture
def random_store(store_url: str) -> Iterator[str]:
    """Two users with random memories (kinds, importance, some archived) and sessions."""
    rng = random.Random(13)
    with TrueMem(store_url, settings=Settings(dedup_threshold=1.0, admission_threshold=0.0)
                 ) as memory:
        for user in ("ana", "bob"):
            memory.add_memories(user, [
                {"text": sentence(rng), "importance": rng.randint(1, 5),
                 "kind": rng.choice(["semantic", "episodic"])} for _ in range(60)])
            for session in ("past", "now"):
                memory.record_messages(user, session, [
                    (rng.choice(["user", "assistant"]), sentence(rng)) for _ in range(30)])
            memory.drain(timeout=120)
            for stored in rng.sample(memory.list_memories(user), 10):
                memory.update_memory(user, stored.id, importance=1)
        yield store_url


def queries(rng: random.Random) -> list[str]:
    typos = ["Portto", "guitr", "Berln", "sushi peanutz", "who is Zoe?", "the thing"]
    return [sentence(rng) for _ in range(12)] + typos + ["", "a"]


async def one_by_one_and_together(url: str) -> list[tuple[Any, Any]]:
    rng = random.Random(7)
    db = Database(resolve_url(url), embedder=None)
    channels = channels_for_dialect(db.dialect)
    now = datetime.now(UTC)
    corpora = [
        memories_of("ana"),
        memories_of("bob", make_filters(kind="episodic", min_importance=2)),
        memories_of("ana", make_filters(state=["active", "archived"],
                                        created_after=now - timedelta(days=1))),
        memories_of("nobody"),
        past_turns_of("ana", "now", 6),
        past_turns_of("bob", "past", 6),
    ]
    pairs = []
    try:
        async with db.autocommit() as conn:
            for corpus in corpora:
                fuzzy_too = corpus.table.name == "memories"  # messages: keyword only
                for query in queries(rng):
                    words = keyword_terms(query)
                    fuzzy = significant_terms(query) if fuzzy_too else None
                    for k, threshold in ((10, 0.3), (3, 0.5)):
                        together = await channels.lexical(conn, corpus, words, fuzzy, k,
                                                          threshold=threshold)
                        apart = {"keyword": await channels.keyword(conn, corpus, words, k)}
                        if fuzzy is not None:
                            apart["trigram"] = await channels.trigram(
                                conn, corpus, fuzzy, k, threshold=threshold)
                        pairs.append((together, apart))
                    only_words = await channels.lexical(conn, corpus, words, None, 10,
                                                        threshold=0.3)
                    pairs.append((only_words,
                                  {"keyword": await channels.keyword(conn, corpus, words, 10)}))
    finally:
        await db.close()
    return pairs


def test_both_lexical_channels_at_once_equal_each_channel_alone(random_store: str) -> None:
    pairs = asyncio.run(one_by_one_and_together(random_store))
    assert len(pairs) == 6 * 20 * 3
    for together, apart in pairs:
        assert together == apart
    assert sum(bool(apart["keyword"]) for _, apart in pairs) > 100  # not all empty
    assert sum(bool(apart.get("trigram")) for _, apart in pairs) > 50


@contextmanager
def statements_sent() -> Iterator[list[str]]:
    """The first word of each statement sent meanwhile. Neither driver adds a BEGIN of its
    own (checked on every statement: psycopg is in autocommit mode, sqlite3 leaves
    transactions to TrueMem), so a transaction's BEGIN is in the list, and a statement
    without one before it ran on its own."""
    sent: list[str] = []
    driver_begins: list[bool] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        driver = conn.connection.dbapi_connection
        driver_begins.append(not driver.autocommit if hasattr(driver, "autocommit")
                             else driver.isolation_level is not None)
        sent.append(statement.split()[0].upper())

    event.listen(Engine, "before_cursor_execute", seen)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert driver_begins and not any(driver_begins), driver_begins


def test_record_is_one_statement_on_its_own_on_postgres(memory: TrueMem, backend: str) -> None:
    memory.record("ana", "s", "hello", "hi")  # the store is open, the session exists
    memory.drain(timeout=60)
    # the jobs stay queued in the database meanwhile: only record's statements are seen
    memory._core.conversation.on_queued = lambda keys: None
    with statements_sent() as sent:
        recorded = memory.record("ana", "s", "I live in Porto", "Nice!")
    # PostgreSQL: session, messages and jobs in one statement (data-modifying CTEs),
    # outside a transaction. SQLite: the session, the messages, the jobs, in one.
    assert sent == (["WITH"] if backend == "postgres" else
                    ["BEGIN", "INSERT", "INSERT", "WITH"]), sent
    state = memory.sessions.get("ana", "s")
    assert [m.content for m in state.recent] == ["hello", "hi", "I live in Porto",
                                                          "Nice!"]
    ids = [m.id for m in state.recent]
    assert ids == sorted(ids)
    assert (recorded.user_message_id, recorded.assistant_message_id) == tuple(ids[2:])
    # the first exchange queued the user's maintenance; it is not due again so soon
    assert recorded.jobs == [f"extract:{ids[2]}", f"synthesize:{ids[3]}"]


def test_a_read_of_one_statement_runs_on_its_own(memory: TrueMem) -> None:
    """get_memory, list_memories and history are one statement each: no BEGIN and COMMIT
    round trips around it (a statement sees one snapshot on both databases)."""
    stored = memory.add_memory("ana", "Lives in Porto")
    with statements_sent() as sent:
        assert memory.get_memory("ana", stored.id).text == "Lives in Porto"
        assert [m.id for m in memory.list_memories("ana")] == [stored.id]
        assert [e.action for e in memory.history("ana", stored.id)] == ["added"]
    assert sent == ["SELECT"] * 3, sent


def test_a_job_reads_its_row_in_one_statement_on_its_own(memory: TrueMem) -> None:
    """The runner reads a job's row alone, as the drain and the sweep read the jobs table:
    no BEGIN and COMMIT round trips around one statement (four jobs per exchange)."""
    memory.record("ana", "s", "hello", "hi")
    memory.drain(timeout=60)
    memory._core.conversation.on_queued = lambda keys: None  # the next jobs stay unsent
    key = memory.record("ana", "s", "I live in Porto", "Nice!").jobs[0]
    with statements_sent() as sent:
        memory._loop.run(memory._core.runner.run(key))
    assert sent[0] == "SELECT", sent
    assert "Porto" in " ".join(m.text for m in memory.list_memories("ana"))  # the job ran


def test_a_transaction_is_one_and_a_statement_on_its_own_commits(store_url: str) -> None:
    """The drivers run in autocommit mode; ``Database.transaction`` sends its own BEGIN.
    What a transaction wrote is seen by others once it commits, not before, and nothing of
    it stays when it fails; ``Database.autocommit`` sends no BEGIN, and its write is seen
    at once."""
    def row(key: str) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {"key": key, "user_id": "ana", "kind": "maintain", "payload": {},
                "status": "pending", "attempts": 0, "created_at": now, "updated_at": now}

    async def run() -> None:
        db = Database(resolve_url(store_url), embedder=None)
        try:
            await db.open()  # its migration check is no part of this
            with statements_sent() as sent:
                async with db.transaction() as conn:
                    await conn.execute(jobs.insert(), [row("t:1")])
                    async with db.autocommit() as other:  # another connection
                        assert await keys(other) == []  # not committed yet
            assert sent == ["BEGIN", "INSERT", "SELECT"], sent
            with pytest.raises(ZeroDivisionError):
                async with db.transaction() as conn:
                    await conn.execute(jobs.insert(), [row("t:2")])
                    1 / 0  # noqa: B018
            with statements_sent() as sent:
                async with db.autocommit() as conn:
                    await conn.execute(jobs.insert(), [row("t:3")])
                    async with db.autocommit() as other:
                        assert await keys(other) == ["t:1", "t:3"]
            assert sent == ["INSERT", "SELECT"], sent
        finally:
            await db.close()

    async def keys(conn: Any) -> list[str]:
        found = await conn.execute(select(jobs.c.key).where(jobs.c.key.like("t:%")))
        return sorted(found.scalars())

    asyncio.run(run())


def test_sqlite_makes_one_trip_to_its_thread_per_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aiosqlite runs each call on the connection's thread; a statement is one trip
    there (not cursor, execute, fetch, close), and handing back a connection with
    nothing begun is none (not a ROLLBACK). Errors and transactions are as before."""
    url = f"sqlite:///{tmp_path / 'trips.db'}"
    trips: list[str] = []
    queue = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, function: Any, *args: Any,
                      **kwargs: Any) -> Any:
        trips.append(getattr(function, "func", function).__name__)
        return await queue(self, function, *args, **kwargs)

    statements: list[str] = []
    with TrueMem(url) as memory:
        memory.record("ana", "s", "I live in Porto and play the guitar.", "Nice!")
        memory.add_memory("ana", "Plays jazz piano on Sundays")
        memory.drain(timeout=60)
        memory.get_context("ana", "s2", "hello")  # the pool holds its connections now
        memory.drain(timeout=60)  # and its retrieval counts are written before the window
        engine = memory._core.db.engine.sync_engine
        def seen(*args: Any) -> None:
            statements.append(args[2].split()[0].upper())

        event.listen(engine, "before_cursor_execute", seen)
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        context = memory.get_context("ana", "s2", "Where do I live and what do I play?")
        listed = memory.list_memories("ana")
        stored = memory.add_memory("ana", "Runs a marathon every spring")
        memory.drain(timeout=60)  # the retrieval counts are written too, in the window
        monkeypatch.undo()
        event.remove(engine, "before_cursor_execute", seen)
        # a statement that fails inside a transaction: the error is typed, nothing stays
        with pytest.raises(StorageError):
            memory._loop.run(_insert_twice(memory, stored.id))
        assert [m.text for m in memory.list_memories("ana")].count(
            "Runs a marathon every spring") == 1
    served = [*(m.text for m in context.facts), *(t.content for t in context.recalled)]
    assert any("Porto" in line for line in served), served
    assert "Plays jazz piano on Sundays" in {m.text for m in listed}
    # every trip was a statement, but the COMMITs of write transactions
    assert len([t for t in trips if t != "commit"]) == len(statements), (trips, statements)
    assert "rollback" not in trips and 1 <= trips.count("commit") <= 2


async def _insert_twice(memory: TrueMem, memory_id: str) -> None:
    """A write transaction whose second statement violates the primary key."""
    async with memory._core.db.transaction() as conn:
        await conn.execute(update(memories).where(memories.c.id == memory_id)
                           .values(text="Runs a marathon every autumn"))
        await conn.execute(select(memories.c.id).where(memories.c.id == memory_id))
        await conn.exec_driver_sql(
            "INSERT INTO memories (id, user_id, text) SELECT id, user_id, text FROM memories "
            f"WHERE id = '{memory_id}'")


def test_record_counts_the_new_messages_toward_the_summary(store_url: str) -> None:
    settings = Settings(summary_token_threshold=20)
    with TrueMem(store_url, settings=settings) as memory:
        first = memory.record("ana", "s", "one two three", "four five")  # ~5 tokens
        assert not [k for k in first.jobs if k.startswith("summarize:")]
        long = " ".join(WORDS)  # ~30 tokens: over the threshold only with it counted
        second = memory.record("ana", "s", long, "ok")
        assert [k for k in second.jobs if k.startswith("summarize:")]


def jobs_by_rule(session: str, roles: list[str], ids: list[int], tokens: list[int],
                 waiting: int, threshold: int, *, maintained: bool,
                 ) -> dict[str, tuple[str, dict[str, Any]]]:
    """The reference: the jobs a batch of messages implies, rule by rule, in Python
    (``maintained``: a maintain job of the user's was queued within the interval)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    covered: set[int] = set()
    for n, role in enumerate(roles):
        if role == "user":
            reply = ids[n + 1] if n + 1 < len(ids) and roles[n + 1] == "assistant" else None
            found[f"extract:{ids[n]}"] = ("extract", {
                "session_id": session, "user_message_id": ids[n],
                "assistant_message_id": reply})
            covered.update(i for i in (ids[n], reply) if i is not None)
    if "user" in roles and not maintained:
        found[f"maintain:{ids[-1]}"] = ("maintain", {"session_id": session})
    if rest := [i for i in ids if i not in covered]:
        found[f"embed:{rest[0]}"] = ("embed", {"message_ids": rest})
    if waiting + sum(tokens) > threshold:
        found[f"summarize:{ids[-1]}"] = ("summarize", {"session_id": session})
    if "user" in roles:
        found[f"synthesize:{ids[-1]}"] = ("synthesize", {"session_id": session,
                                                        "from_message_id": ids[0]})
    return found


@pytest.mark.parametrize("interval", [0.0, 3600.0])
def test_the_jobs_record_queues_follow_the_rules_on_random_batches(
    store_url: str, interval: float,
) -> None:
    rng = random.Random(7)
    threshold = 60
    with TrueMem(store_url, settings=Settings(summary_token_threshold=threshold,
                                              maintain_interval_s=interval)) as memory:
        memory._core.conversation.on_queued = lambda keys: None  # the rows stay to compare
        summarized = maintained = 0
        for n in range(40):
            session = f"s{n % 5}"
            mine = (messages.c.user_id == "ana", messages.c.session_id == session)
            waiting = rows(memory, select(func.coalesce(func.sum(messages.c.tokens), 0))
                           .where(*mine, messages.c.summarized.is_(False)))[0][0]
            roles = [rng.choice(["user", "assistant", "system"]) for _ in range(rng.randint(1, 7))]
            ids = memory.record_messages("ana", session, [(r, sentence(rng)) for r in roles])
            tokens = [row.tokens for row in rows(memory, select(messages.c.tokens).where(
                *mine, messages.c.id.in_(ids)).order_by(messages.c.id))]
            expected = jobs_by_rule(session, roles, ids, tokens, waiting, threshold,
                                    maintained=interval > 0 and maintained > 0)
            stored = {row.key: (row.kind, row.payload) for row in rows(
                memory, select(jobs.c.key, jobs.c.kind, jobs.c.payload, jobs.c.user_id)
                .where(jobs.c.key.in_(list(expected) + [f"{k}:{i}" for i in ids for k in (
                    "extract", "maintain", "embed", "summarize", "synthesize")]),
                       jobs.c.user_id == "ana"))}
            assert stored == expected, (roles, ids)
            summarized += any(key.startswith("summarize:") for key in expected)
            maintained += any(key.startswith("maintain:") for key in expected)
    assert 5 < summarized < 35  # the threshold was passed, and not by every batch
    # every batch with a user message, or only the first within the hour
    assert maintained > 20 if interval == 0 else maintained == 1


async def nearest_with_the_embedding_to_come(url: str) -> list[tuple[list[str], Any, Any]]:
    """Each corpus's nearest rows given the query's embedding, and given it still to
    come, with the order in which the statement ran and the embedding was awaited."""
    db = Database(resolve_url(url), embedder=None)
    channels = channels_for_dialect(db.dialect)
    vector = default_embedder().embed(["Porto sushi with my sister Zoe"])[0]
    happened: list[str] = []

    def statement(*_args: Any) -> None:
        happened.append("statement")

    async def embedding() -> Any:
        happened.append("embedding awaited")
        return vector

    found = []
    event.listen(db.engine.sync_engine, "before_cursor_execute", statement)
    try:
        async with db.autocommit() as conn:
            for corpus in (memories_of("ana"), past_turns_of("bob", "past", 4)):
                given = await channels.nearest(conn, corpus, vector, 5)
                happened.clear()
                to_come = await channels.nearest(conn, corpus, embedding(), 5)
                found.append((list(happened), to_come, given))
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", statement)
        await db.close()
    return found


def test_sqlite_reads_the_vectors_while_the_query_is_still_being_embedded(
    random_store: str, backend: str,
) -> None:
    """SQLite ranks in NumPy over the user's vectors, which it reads before it waits for
    the query's embedding; PostgreSQL's statement needs the embedding."""
    for happened, to_come, given in asyncio.run(nearest_with_the_embedding_to_come(random_store)):
        assert to_come == given and len(given) == 5
        assert happened == (["statement", "embedding awaited"] if backend == "sqlite"
                            else ["embedding awaited", "statement"])


class WaitsForAStatement:
    """The built-in model; once ``gated``, it embeds only after a statement has been sent
    (or after five seconds without one), noting which came first."""

    def __init__(self) -> None:
        self.model = default_embedder()
        self.model_name, self.dimension = self.model.model_name, self.model.dimension
        self.gated = False
        self.statement = threading.Event()
        self.came_first: list[bool] = []

    def sent(self, *_args: Any) -> None:
        self.statement.set()

    def embed(self, texts: list[str]) -> Any:
        if self.gated:
            self.came_first.append(self.statement.wait(timeout=5))
        return self.model.embed(texts)


def test_search_embeds_the_query_while_its_lexical_channels_run(store_url: str) -> None:
    """``search`` without a vector starts the embedding and runs the lexical channels
    meanwhile (a chain before: embed, then every statement), with the same answer."""
    embedder = WaitsForAStatement()
    query = "peanut allergy in Porto"
    with TrueMem(store_url, embedder=embedder) as memory:
        for text in ("Is allergic to peanuts", "Lives in Porto", "Plays jazz piano"):
            memory.add_memory("ana", text)
        embedder.gated = True
        event.listen(Engine, "before_cursor_execute", embedder.sent)
        try:
            found = memory.search("ana", query)
        finally:
            event.remove(Engine, "before_cursor_execute", embedder.sent)
        embedder.gated = False
        again = memory.search("ana", query)  # its vector from the query cache, at once
    assert embedder.came_first == [True]
    assert [(h.memory.id, h.score, h.ranks) for h in found] == [
        (h.memory.id, h.score, h.ranks) for h in again]
    assert found[0].memory.text == "Is allergic to peanuts"


async def with_and_without_rows(url: str) -> list[tuple[Any, Any, int, bool]]:
    """Searches with their rows read and without (then read by id), how many more
    statements the first sent, and whether adjacent rows were looked for; random
    queries, corpora, modes and adjacent-channel settings."""
    rng = random.Random(5)
    db = Database(resolve_url(url), embedder=None)
    channels = channels_for_dialect(db.dialect)
    embedder = default_embedder()
    corpora = [(memories_of("ana"), [c for c in memories.c if c.name != "embedding"]),
               (memories_of("bob", make_filters(kind="episodic", min_importance=2)),
                [memories.c.id, memories.c.text, memories.c.created_at]),
               (past_turns_of("ana", "now", 6), [messages.c.id, messages.c.content]),
               (past_turns_of("bob", "past", 4), [messages.c.id, messages.c.session_id])]
    sent: list[None] = []

    def seen(*_args: Any) -> None:
        sent.append(None)

    def counted(search: Any) -> Any:
        async def run() -> tuple[Any, int]:
            before = len(sent)
            found = await search
            return found, len(sent) - before
        return run()

    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    found = []
    try:
        async with db.autocommit() as conn:
            for query in queries(rng) * 2:
                vector = embedder.embed([query])[0]
                corpus, columns = rng.choice(corpora)
                settings = Settings(adjacent_seeds=rng.choice([0, 1, 3, 8]),
                                    adjacent_span=rng.choice([0, 1, 2]),
                                    weight_adjacent=rng.choice([0.0, 1.0]),
                                    # past messages have no trigram channel (``recall``)
                                    weight_trigram=0.0 if corpus.table is messages else 1.0)
                for mode in ("hybrid", "vector", "keyword"):
                    k = rng.choice([1, 3, 10, 100])
                    args = (conn, channels, corpus, query, vector)
                    read, with_rows = await counted(hybrid.run(
                        *args, k=k, mode=mode, settings=settings, columns=columns))
                    hits, without = await counted(hybrid.run(
                        *args, k=k, mode=mode, settings=settings))
                    table = corpus.table
                    by_id = {row.id: row for row in await conn.execute(
                        select(*columns).where(table.c.user_id == corpus.user_id,
                                               table.c.id.in_([hit.id for hit in hits])))}
                    around = bool(mode == "hybrid" and hits and settings.adjacent_seeds
                                  and settings.adjacent_span and settings.weight_adjacent)
                    found.append(([(hit, hit.row) for hit in read],
                                  [(hit, by_id[hit.id]) for hit in hits],
                                  with_rows - without, around))
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
        await db.close()
    return found


def test_a_search_reads_its_hits_rows_in_the_adjacent_channels_statement(random_store: str) -> None:
    found = asyncio.run(with_and_without_rows(random_store))
    for read, expected, more, around in found:
        assert [(hit.id, hit.score, hit.ranks, hit.scores) for hit, _ in read] == [
            (hit.id, hit.score, hit.ranks, hit.scores) for hit, _ in expected]
        # the columns asked for, then the adjacent rows'
        assert [tuple(row)[:len(same)] for (_, row), (_, same) in zip(read, expected, strict=True)
                ] == [tuple(same) for _, same in expected]
        # the rows come with the adjacent rows, or alone (none looked for); a search
        # that finds nothing reads none
        assert more == (0 if around or not expected else 1)
    assert sum(len(read) for read, *_ in found) > 300
    assert sum(any("adjacent" in hit.ranks for hit, _ in read) for read, *_ in found) > 5
    assert sum(around for *_, around in found) > 10


def test_the_query_cache_never_returns_another_texts_vector(
    monkeypatch: pytest.MonkeyPatch, store_url: str,
) -> None:
    monkeypatch.setattr(service, "QUERY_CACHE_SIZE", 4)
    embedder = default_embedder()
    texts = ["Where do I live?", "where do I live?", "Where do I live? ", "Where do I live",
             "Wh\u00e9re do I live?", "Where do I live?\n", "x" * (service.QUERY_CACHE_CHARS + 1)]
    with TrueMem(store_url) as memory:
        store = memory._core.memories
        for _ in range(3):  # cold, then served from the cache, then after evictions
            for text in texts:
                got = asyncio.run_coroutine_threadsafe(
                    store.embed_query(text), memory._loop.loop).result()
                assert np.array_equal(got, embedder.embed([text])[0]), text
                assert not got.flags.writeable
        assert len(store._queries) == 4
        assert texts[-1] not in store._queries  # too long to be worth keeping


def test_a_message_get_context_embedded_is_not_embedded_again_when_recorded(
    store_url: str,
) -> None:
    """The extraction job takes the user's message's vector from the query cache."""
    embedder = RecordingEmbedder()
    said, reply = "I moved to Porto last spring with my sister Zoe.", "Porto is lovely!"
    with TrueMem(store_url, embedder=embedder) as memory:
        memory.get_context("ana", "s1", said)
        memory.record("ana", "s1", said, reply)
        memory.drain()
        stored = {row.content: row.embedding
                  for row in rows(memory, select(messages.c.content, messages.c.embedding))}
    assert (embedder.seen[said], embedder.seen[reply]) == (1, 1)
    for text in (said, reply):  # each stored with its own vector
        assert np.allclose(stored[text], embedder.model.embed([text])[0], atol=1e-6)


class QueryCountingEmbedder(RecordingEmbedder):
    """The built-in model with int8 queries, counting what each path is given."""

    def __init__(self) -> None:
        super().__init__()
        self.model = MiniLMEmbedder(int8_queries=True)
        self.queries: Counter[str] = Counter()

    def embed_queries(self, texts: list[str]) -> Any:
        self.queries.update(texts)
        assert self.model.embed_queries is not None
        return self.model.embed_queries(texts)


def test_with_int8_queries_a_message_is_stored_with_its_own_fp32_vector(
    store_url: str,
) -> None:
    """A query's vector (int8 arithmetic) serves searches only: the extraction job embeds
    the message again as any stored text, and search queries take the query path."""
    embedder = QueryCountingEmbedder()
    said, reply = "I moved to Porto last spring with my sister Zoe.", "Porto is lovely!"
    with TrueMem(store_url, embedder=embedder) as memory:
        memory.add_memory("ana", "Ana's sister is called Zoe.")
        memory.get_context("ana", "s1", said)
        memory.record("ana", "s1", said, reply)
        memory.drain()
        assert memory.search("ana", "Who is Zoe?")[0].memory.text == "Ana's sister is called Zoe."
        stored = {row.content: row.embedding
                  for row in rows(memory, select(messages.c.content, messages.c.embedding))}
    assert embedder.queries == Counter({said: 1, "Who is Zoe?": 1})
    assert (embedder.seen[said], embedder.seen[reply]) == (1, 1)
    for text in (said, reply):
        assert np.allclose(stored[text], default_embedder().embed([text])[0], atol=1e-6)
    assert not np.allclose(embedder.model.embed_queries([said])[0], stored[said], atol=1e-3)


async def around_the_seeds(url: str) -> list[tuple[Any, Any]]:
    """``adjacent`` (the rows around the seeds) against the whole timeline read and
    walked in Python, for random seeds; some memories share a timestamp."""
    rng = random.Random(11)
    db = Database(resolve_url(url), embedder=None)
    pairs = []
    try:
        async with db.transaction() as conn:  # ties in time, broken by id
            tied = (await conn.execute(select(memories.c.id).where(
                memories.c.user_id == "ana").order_by(memories.c.id).limit(12))).scalars().all()
            await conn.execute(update(memories).where(memories.c.id.in_(tied))
                               .values(created_at=datetime(2026, 1, 1, tzinfo=UTC)))
        for window in (1800.0, 0.0, 10**9):
            settings = Settings(adjacent_window_s=window, adjacent_span=rng.choice([1, 2, 3]))
            async with db.autocommit() as conn:
                for corpus in (memories_of("ana"), memories_of("bob", make_filters(
                        min_importance=2)), past_turns_of("ana", "now", 6),
                        past_turns_of("bob", "past", 4)):
                    every = (await conn.execute(select(corpus.table.c.id).where(*corpus.where),
                                                corpus.params)).scalars().all()
                    for size in (1, 3, 8):
                        seeds = [Fused(key, rng.random()) for key in rng.sample(every, size)]
                        found = await adjacent.adjacent(conn, corpus, seeds, settings)
                        pairs.append((found.ranking,
                                      await whole_timeline(conn, corpus, seeds, settings)))
    finally:
        await db.close()
    return pairs


async def whole_timeline(conn: Any, corpus: Any, seeds: list[Fused], settings: Settings) -> Any:
    table = corpus.table
    timed = table is memories
    place = table.c.created_at if timed else table.c.session_id
    timeline = sorted((row[0], row[1]) for row in await conn.execute(
        select(place, table.c.id).where(*corpus.where), corpus.params))
    where = {key: (at, key) for at, key in timeline}
    window = timedelta(seconds=settings.adjacent_window_s) if timed else None
    best: dict[Any, float] = {}
    for seed in seeds:
        for near in around(timeline, where[seed.id], settings.adjacent_span, window):
            best[near] = max(best.get(near, 0.0), seed.score)
    return sorted(best.items(), key=lambda item: (-item[1], str(item[0])))


def around(
    timeline: list[tuple[Any, Any]], seed: tuple[Any, Any], span: int, window: timedelta | None,
) -> list[Any]:
    """What adjacent rows are: up to ``span`` ids on each side of ``seed`` in the whole sorted
    timeline, kept when within ``window`` of it in time, or (no window) in its session."""
    at = seed[0]
    place = timeline.index(seed)
    return [key for other, key in (*timeline[max(0, place - span):place],
                                   *timeline[place + 1:place + 1 + span])
            if (abs(other - at) <= window if window is not None else other == at)]


def test_the_rows_around_the_seeds_give_the_adjacent_rows_of_the_whole_timeline(
    random_store: str,
) -> None:
    pairs = asyncio.run(around_the_seeds(random_store))
    assert len(pairs) == 3 * 4 * 3
    for found, expected in pairs:
        assert found == expected
    assert sum(len(expected) for _, expected in pairs) > 100


def test_retrievals_counted_behind_concurrent_calls_add_up(memory: TrueMem) -> None:
    for fact in ("Lives in Porto", "Works as a nurse", "Plays the guitar", "Allergic to nuts"):
        memory.add_memory("ana", fact)
    memory.add_memory("bob", "Lives in Berlin")

    async def many() -> list[Any]:
        return list(await asyncio.gather(*(
            memory.aget_context("ana", f"s{n % 3}", f"where do I live and work? {n}")
            for n in range(12))))

    contexts = asyncio.run(many())
    memory.drain(timeout=60)
    served = Counter(hit.memory.id for context in contexts for hit in context.memories)
    assert served  # the calls did serve memories
    counted = {row.id: (row.user_id, row.retrievals) for row in rows(
        memory, select(memories.c.id, memories.c.user_id, memories.c.retrievals))}
    assert {i: n for i, (user, n) in counted.items() if user == "ana" and n} == dict(served)
    assert [n for user, n in counted.values() if user == "bob"] == [0]


def test_get_context_builds_its_statements_once(memory: TrueMem) -> None:
    """After a first call of each shape, get_context executes only statement objects it
    has executed before: none is rebuilt (nor its SQLAlchemy cache key recomputed) per
    call, whoever the user and whatever the words."""
    for user in ("ana", "bob"):
        memory.add_memory(user, "Lives in Porto with her sister Zoe", importance=5)
        memory.add_memory(user, "Works as a nurse at the city hospital")
        memory.record(user, "past", "I play the guitar on Sundays", "Lovely!")
        memory.record(user, "now", "Planning a marathon in Lisbon", "Good luck!")
    memory.drain(timeout=60)
    first_query, later_query = "where does my sister live?", "where does my cousin work?"
    for terms in (keyword_terms, significant_terms):  # the same shape of statements
        assert len(terms(first_query)) == len(terms(later_query)) > 0
    executed: list[Any] = []

    def seen(_conn: Any, clause: Any, *_args: Any) -> None:
        if isinstance(clause, Select | CompoundSelect):  # not the retrieval counts' write
            executed.append(clause)

    engine = memory._core.db.engine.sync_engine
    event.listen(engine, "before_execute", seen)
    try:
        memory.get_context("ana", "now", first_query)
        first = {id(clause) for clause in executed}
        executed.clear()
        memory.get_context("bob", "now", later_query)
        memory.get_context("ana", "past", later_query)
        later = {id(clause) for clause in executed}
    finally:
        event.remove(engine, "before_execute", seen)
    assert len(first) >= 8  # search, recall, session and critical memories
    assert later <= first


def test_get_context_reads_its_message_for_terms_once(memory: TrueMem) -> None:
    """The memories, the past messages, the passages of long ones and the syntheses are
    searched with the same message: its terms are read once per context (then found in
    the cache), not once per corpus and term list; so are the second hop's."""
    memory.add_memory("ana", "Lives in Porto")
    memory.record("ana", "before", "I like hiking in the Alps", "Nice")
    memory.drain(timeout=60)
    query_text._terms.cache_clear()  # the other backend's run read the same message
    before = query_text._terms.cache_info()
    memory.get_context("ana", "now", "Where do I live these days, and what do I like?")
    after = query_text._terms.cache_info()
    # the message: 1 miss, then 1 hit each for the past messages, their passages, the
    # syntheses and the hop's query (which takes its words); the hop's query: 1 miss,
    # then 1 hit each for the past messages and their passages
    assert (after.misses - before.misses, after.hits - before.hits) == (2, 6)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_sends_one_lexical_statement_whatever_the_terms(memory: TrueMem) -> None:
    """The query's terms are bound as arrays: every search sends the same lexical
    statement, which psycopg prepares once per connection and PostgreSQL plans once
    (one statement per number of terms would be planned anew until each was prepared)."""
    memory.add_memory("ana", "Lives in Porto with her sister Zoe")
    sent: dict[str, set[str]] = {}
    mode = ""

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "corpus_rows" in statement:
            sent.setdefault(mode, set()).add(statement)

    engine = memory._core.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    found = []
    try:
        for query in ("Porto", "sister Zoe", "where did my sister Zoe move, Porto?"):
            for mode in ("keyword", "trigram", "hybrid"):
                found.append([hit.memory.text for hit in memory.search("ana", query, mode=mode)])
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert {name: len(statements) for name, statements in sent.items()} == {
        "keyword": 1, "trigram": 1, "hybrid": 1}, sent
    # the trigram channel's part is sent only when it runs
    assert "word_similarity" not in next(iter(sent["keyword"]))
    assert sent["trigram"] == sent["hybrid"]
    assert all(texts == ["Lives in Porto with her sister Zoe"] for texts in found), found


async def plans_of_the_search_statements(url: str) -> list[tuple[str, int, int]]:
    """(statement, custom plans, generic plans) of each statement a connection prepared
    while it ran the same hybrid searches, over memories and past messages, ten times."""
    db = Database(resolve_url(url), embedder=None)
    channels = channels_for_dialect(db.dialect)
    vector = default_embedder().embed(["where does my sister live?"])[0]
    corpora = [(memories_of("ana"), [memories.c.id, memories.c.text]),
               (past_turns_of("ana", "now", 6), [messages.c.id, messages.c.content])]
    try:
        async with db.autocommit() as conn:
            for _ in range(10):  # psycopg prepares a statement on its fifth run
                for corpus, columns in corpora:
                    await hybrid.run(conn, channels, corpus, "sister Zoe in Porto", vector,
                                     k=5, mode="hybrid", settings=Settings(), columns=columns)
            found = await conn.exec_driver_sql(
                "SELECT statement, custom_plans, generic_plans FROM pg_prepared_statements")
            return [tuple(row) for row in found]
    finally:
        await db.close()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_plans_a_prepared_search_statement_once(random_store: str) -> None:
    """Left to choose, PostgreSQL planned the lexical and adjacent statements anew on
    every call (a fifth of its work per get_context); TrueMem's connections use the
    generic plan of each prepared statement."""
    plans = asyncio.run(plans_of_the_search_statements(random_store))
    searches = [plan for plan in plans if "corpus_rows" in plan[0] or "pairs" in plan[0]]
    assert len(searches) == 4, plans  # lexical and adjacent, over memories and messages
    assert all(custom == 0 and generic > 0 for _, custom, generic in plans), plans


def test_recall_measures_no_message_text(memory: TrueMem) -> None:
    """Past messages are weighed by their stored token counts: no statement of a
    context measures a message's text (a history of long messages would otherwise be
    read whole on every call), and on PostgreSQL the lexical statement over messages
    reads no text at all."""
    memory.record("ana", "before", "I like hiking in the Alps", "Nice")
    memory.drain(timeout=60)
    sent: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(statement)

    engine = memory._core.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        context = memory.get_context("ana", "now", "Where did I go hiking?")
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert context.recalled  # found through the keyword "hiking" and the turn adjacent to it
    assert not [s for s in sent if "length(messages.content)" in s]
    assert [s for s in sent if "messages.tokens" in s]  # the weighing is there
    # over messages, and over the passages of long ones (whose recent window is read
    # from messages); on PostgreSQL one per search: the message's, the second hop's
    for corpus in ("messages", "passages"):
        lexical = [s for s in sent if re.search(rf"corpus_rows AS \w+\s*\(SELECT {corpus}\.id", s)]
        assert len(lexical) == (2 if engine.dialect.name == "postgresql" else 0), lexical
        assert not [s for s in lexical if "content" in s], lexical
