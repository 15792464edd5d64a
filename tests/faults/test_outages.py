"""Outages: Redis stopped mid-stream loses no job; a database that is down says so in words."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from pathlib import Path

import dramatiq
import pytest
import services
from fault_tools import assert_clean_message, exported_messages, job_statuses, worker_process
from sqlalchemy.engine import make_url

from truemem_core import Settings, StorageError, TrueMem
from truemem_core.jobs import dispatcher
from truemem_core.storage import database, dialects, outbox

PHASES = ("before", "during", "after")  # the outage


def test_redis_stopped_and_restarted_mid_stream_loses_nothing(
    memory: TrueMem, redis_server: services.RedisServer
) -> None:
    url = memory.admin.database_url
    with TrueMem(url, redis_url=redis_server.url) as producer, worker_process(
            url, redis_server.url):
        keys: list[str] = []
        for phase in PHASES:
            if phase == "during":
                redis_server.stop()  # jobs sent just before are lost with it (no persistence)
            for n in range(3):
                # accepted although the broker is down: the job rows wait in the database
                keys += producer.record(
                    "ana", "s", f"My {phase} pet number {n} is named Pet{phase}{n}.", "Nice.").jobs
            if phase == "during":
                redis_server.start()  # empty: the producer's drain and the worker's sweep re-send
        producer.drain(timeout=60)
    statuses = job_statuses(url)
    assert {key: statuses.get(key) for key in keys} == dict.fromkeys(keys, "done")
    said = {f"My {p} pet number {n} is named Pet{p}{n}." for p in PHASES for n in range(3)}
    stored = exported_messages(memory, "ana")
    assert {text: stored[("s", text)] for text in said} == dict.fromkeys(said, 1)


class HungServer:
    """A server on loopback that takes connections and reads them, never answering; it
    counts the connections their client gave up on (redis-py's socket timeout)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self.server.getsockname()[1]}/0"
        self.taken = self.given_up = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # the server closed
            while True:
                conn, _ = self.server.accept()
                self.taken += 1
                threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while conn.recv(4096):
                pass
        self.given_up += 1


def test_a_hung_broker_holds_up_no_call(memory: TrueMem, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Redis that never answers: ``record`` returns (its jobs wait in the database) and
    other calls go on while the send hangs, and closing does not wait for it."""
    monkeypatch.setattr(dispatcher, "STOP_TIMEOUT_S", 0.5)  # the hung send is abandoned
    memory.add_memory("bob", "Lives in Lyon")
    hung = HungServer()
    with hung.server, TrueMem(memory.admin.database_url, redis_url=hung.url) as producer:
        recorded = producer.record("ana", "s", "I live in Porto.", "Nice.")
        assert [m.text for m in producer.list_memories("bob")] == ["Lives in Lyon"]
        producer.record("ana", "s", "And Lisbon.", "Ok.")
        deadline = time.monotonic() + 30
        while not hung.taken and time.monotonic() < deadline:
            time.sleep(0.01)
        assert hung.taken, "no send reached the broker"
        # nothing above waited for the broker: no send has given up on it yet
        assert hung.given_up == 0
        statuses = job_statuses(memory.admin.database_url)
        assert {statuses[key] for key in recorded.jobs} == {"pending"}


def unreachable_url(backend: str, tmp_path: Path, memory: TrueMem) -> str:
    """A store URL that cannot be opened; on SQLite, tmp_path is not the fixture's file."""
    if backend == "sqlite":  # a directory where the file should be: it cannot be opened
        (tmp_path / "truemem.db").mkdir()
        return f"sqlite:///{tmp_path / 'truemem.db'}"
    # the real server's user and password, but a socket directory nobody listens in
    return make_url(memory.admin.database_url).set(
        password="hunter2-secret",
        query={"host": str(tmp_path / "no-server-here")}).render_as_string(hide_password=False)


def test_a_database_that_is_down_gives_storage_error_in_words(
    backend: str, memory: TrueMem, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp_path = tmp_path_factory.mktemp("down")
    url = unreachable_url(backend, tmp_path, memory)
    with TrueMem(url) as down:
        for call in (lambda: down.record("ana", "s", "I live in Porto.", "Nice."),
                     lambda: down.get_context("ana", "s", "Where do I live?"),
                     lambda: down.list_memories("ana")):
            with pytest.raises(StorageError) as caught:
                call()
            # a server that is not there may come back; a file that cannot be opened
            # is for the operator to fix
            said = "unreachable" if backend == "postgres" else "file cannot be opened"
            assert said in str(caught.value)
            assert caught.value.__cause__ is not None  # the driver's error, for the logs
            assert_clean_message(caught.value, secrets=[
                "hunter2-secret", "Porto", "Where do I live", str(tmp_path), "truemem.db"])


def test_a_job_the_database_cannot_reach_is_retried_in_one_line(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """During an outage every job fails; each says so in one line and is retried by the
    broker (dramatiq's Retry: not logged as an error with its chained tracebacks). A
    storage error that is no outage is raised as it is (its traceback matters)."""
    jobs = memory._core.jobs  # the actor's body, as a Dramatiq worker thread calls it

    async def unreachable(key: str) -> None:
        raise StorageError("database error: the database is unreachable or the connection "
                           "was lost")

    async def broken(key: str) -> None:
        raise StorageError("database error: the database rejected a value")

    monkeypatch.setattr(jobs, "_run_job", unreachable)
    with pytest.raises(dramatiq.Retry), caplog.at_level("WARNING", logger="truemem.jobs"):
        jobs._perform("extract:1")
    assert [r.getMessage() for r in caplog.records] == [
        "job extract:1 not run: database error: the database is unreachable or the "
        "connection was lost (retried later)"]
    monkeypatch.setattr(jobs, "_run_job", broken)
    with pytest.raises(StorageError, match="rejected a value"):
        jobs._perform("extract:2")


@pytest.mark.parametrize("backend", ["postgres"])  # a file store has no server to lose
def test_a_database_dropped_while_in_use_gives_storage_error_in_words(memory: TrueMem) -> None:
    memory.add_memory("ana", "Lives in Porto")
    # dropped under the open pool: its connections are terminated, reconnecting fails
    admin = services.sqlalchemy_url(memory.admin.database_url, database="postgres")
    services.drop_database(admin, make_url(memory.admin.database_url).database or "")
    for call in (lambda: memory.list_memories("ana"),
                 lambda: memory.record("ana", "s", "I live in Porto.", "Nice.")):
        with pytest.raises(StorageError) as caught:
            call()
        # the pool's connections were lost; a new one finds no such database
        assert any(words in str(caught.value) for words in ("unreachable", "does not exist"))
        assert_clean_message(caught.value, secrets=["ana", "Porto", "truemem_t"])


def terminate_connections(url: str) -> int:
    """End every server process of ``url``'s database, as a restart would; how many."""
    import psycopg

    admin = services.sqlalchemy_url(url, database="postgres")
    with psycopg.connect(services.libpq_url(admin), autocommit=True) as conn:
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            [make_url(url).database]).fetchall()
    return len(ended)


@pytest.mark.parametrize("backend", ["postgres"])  # a file store has no server to lose
def test_connections_lost_while_idle_are_replaced_before_use(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dialects, "PING_AFTER_IDLE_S", 0.2)
    memory.add_memory("ana", "Lives in Porto")
    memory.get_context("ana", "s", "Where do I live?")  # several pooled connections
    memory.drain(timeout=60)  # its retrieval counts written: no background write later
    assert terminate_connections(memory.admin.database_url) >= 1  # as a server restart would
    time.sleep(0.5)
    assert memory.list_memories("ana")[0].text == "Lives in Porto"  # the first call after
    context = memory.get_context("ana", "s", "Where do I live?")
    assert [hit.memory.text for hit in context.memories] == ["Lives in Porto"]
    memory.record("ana", "s", "Where do I live?", "In Porto.")


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_busy_pool_does_not_test_its_connections(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dialects, "PING_AFTER_IDLE_S", 60.0)  # busy: reused within a minute
    memory.add_memory("ana", "Lives in Porto")
    memory.get_context("ana", "s", "Where do I live?")
    dialect = memory._core.db.engine.dialect
    pings: list[object] = []
    real_ping = dialect.do_ping
    monkeypatch.setattr(dialect, "do_ping", lambda conn: pings.append(conn) or real_ping(conn))
    for n in range(3):
        memory.get_context("ana", "s", f"Where do I live? {n}")
        memory.record("ana", "s", f"Where do I live? {n}", "In Porto.")
    assert pings == []


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_server_that_never_answers_is_an_outage_not_a_hang(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL that takes connections and never answers (frozen, a half-open path)
    fails a call after the connect timeout, in words, instead of holding it for ever; a
    URL's own connect_timeout wins over the default."""
    hung = HungServer()
    port = hung.server.getsockname()[1]
    url = make_url(memory.admin.database_url).set(
        host="127.0.0.1", port=port, query={}).render_as_string(hide_password=False)
    monkeypatch.setattr(database, "CONNECT_TIMEOUT_S", 1)
    for store_url, patience in ((url, 1), (f"{url}?connect_timeout=2", 2)):
        with TrueMem(store_url, preload=False) as down:
            began = time.monotonic()
            with pytest.raises(StorageError, match="unreachable"):
                down.list_memories("ana")
            waited = time.monotonic() - began
        assert patience <= waited < patience + 5, (store_url, waited)
    hung.server.close()


async def test_a_sweep_that_finds_the_database_unreachable_logs_one_line(
    tmp_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Each sweep during an outage says so in one line (it logged a traceback of ~140
    lines every sweep interval); any other failure keeps its traceback."""
    failures = [StorageError("database error: the database is unreachable or the "
                             "connection was lost"),
                StorageError("database error: the database rejected a statement")]

    async def pending(*args: object, **kwargs: object) -> list[object]:
        raise failures[0] if len(failures) > 1 else failures[-1]

    monkeypatch.setattr(outbox, "pending", pending)
    async with TrueMem(tmp_url, settings=Settings(sweep_interval_s=0.05)) as memory:
        with caplog.at_level("WARNING", logger="truemem.jobs"):
            memory._core.jobs.queue()  # starts the in-process worker and its sweep
            deadline = time.monotonic() + 30
            while len(caplog.records) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            failures.pop(0)
            count = len(caplog.records)
            while len(caplog.records) == count and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
    outage = [r for r in caplog.records if "unreachable" in r.getMessage()]
    assert outage and all(r.exc_info is None for r in outage)
    assert outage[0].getMessage().startswith("sweeping pending jobs failed: database error")
    other = [r for r in caplog.records if "unreachable" not in r.getMessage()]
    assert other and other[0].exc_info is not None  # not an outage: the traceback stays
