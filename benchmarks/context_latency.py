"""Latency of the two hot calls, ``get_context`` and ``record``, on SQLite and PostgreSQL.

For each backend it bulk-loads ``--users`` x ``--per-user`` memories with ``scale.py``'s
generator and loader, gives ``--sessions`` sampled users a session of ``--messages`` short
chat lines (rows written straight into ``sessions`` and ``messages`` with SQLAlchemy Core,
one transaction per chunk, token counts from the core's counter; everything older than the
last ``recent_messages`` is already folded into a summary, as the summary job would have
left it), and then measures through the real core, on TrueMem's own loop:

* ``get_context`` with its independent steps run concurrently (``asyncio.gather``, what
  ``TrueMem.get_context`` does) and the same steps in sequence (``concurrent=False``). The
  two are interleaved, the order flipping every pair and each call drawing its own user
  (one with a session) and query, so load from elsewhere affects both alike. Reported: wall
  p50/p95 of the call, the ratio sequential/concurrent of the two p50 from this one run, and
  the p50 of each step from ``Context.timings`` (embed, search, load_session, explicit, total).
* ``record`` through ``TrueMem.record`` in the embedded mode (no Redis): the latency of the
  call only, i.e. committing the two messages and the job rows and handing the job keys to
  the in-process broker. The in-process worker runs the extraction afterwards, in the
  background, on the same machine and loop, so it competes with the later calls; the time
  it needed to catch up (``drain``) is reported apart.

    .venv/bin/python benchmarks/context_latency.py                 # 1,000 x 150, both backends
    .venv/bin/python benchmarks/context_latency.py --json /tmp/context.json
    .venv/bin/python benchmarks/context_latency.py --backends postgres \\
        --database-url postgresql://user:pw@localhost/truemem_bench

Without ``--database-url`` a throw-away PostgreSQL (with pgvector) is started with the
test helpers; a database given with ``--database-url`` must hold no memories or messages.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scale import (
    QUERIES,
    SLOTS,
    Dataset,
    build_dataset,
    bulk_load,
    machine_info,
    percentiles,
    postgres_url,
    progress,
    server_versions,
)
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from truemem_core import Settings, TrueMem, default_embedder
from truemem_core.embeddings import Embedder
from truemem_core.embeddings.tokens import TokenCounter
from truemem_core.language import summarize_extractive
from truemem_core.storage.database import Database
from truemem_core.storage.schema import messages, sessions

STEPS = ("embed", "search", "load_session", "explicit", "total")

# --------------------------------------------------------------------------- #
# Synthetic sessions
# --------------------------------------------------------------------------- #

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


def chat_line(rng: random.Random, templates: Sequence[str]) -> str:
    return rng.choice(templates).format_map({k: rng.choice(v) for k, v in SLOTS.items()})


@dataclass(frozen=True, slots=True)
class Session:
    user_id: str
    session_id: str


def pick_sessions(data: Dataset, count: int, seed: int) -> list[Session]:
    chosen = random.Random(seed).sample(range(data.users), min(count, data.users))
    return [Session(data.user_id(u), f"chat-{n:04d}") for n, u in enumerate(sorted(chosen))]


def session_rows(
    chosen: Sequence[Session], per_session: int, recent: int, tokens: TokenCounter, seed: int
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """The ``sessions`` rows, and the ``messages`` rows round by round (message r of
    every session), so they interleave over time as concurrent chats would."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    step = timedelta(seconds=40)
    starts = [now - timedelta(days=2) + timedelta(minutes=rng.randrange(0, 24 * 60))
              for _ in chosen]
    folded = max(per_session - recent, 0)
    texts: list[list[tuple[str, str]]] = [
        [("user" if r % 2 == 0 else "assistant",
          chat_line(rng, USER_LINES if r % 2 == 0 else ASSISTANT_LINES))
         for r in range(per_session)]
        for _ in chosen
    ]
    heads = [
        {"user_id": s.user_id, "session_id": s.session_id,
         "summary": summarize_extractive(None, turns[:folded]) if folded else None,
         "summarized_through": None, "created_at": start,
         "updated_at": start + step * max(per_session - 1, 0)}
        for s, start, turns in zip(chosen, starts, texts, strict=True)
    ]
    rounds = [
        [{"user_id": s.user_id, "session_id": s.session_id, "role": turns[r][0],
          "content": turns[r][1], "tokens": tokens.count(turns[r][1]),
          "summarized": r < folded, "created_at": start + step * r}
         for s, start, turns in zip(chosen, starts, texts, strict=True)]
        for r in range(per_session)
    ]
    return heads, rounds


def chunked(rounds: Sequence[list[dict[str, Any]]], size: int) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for row in (row for one in rounds for row in one):
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def load_sessions(
    db: Database, heads: list[dict[str, Any]], rounds: list[list[dict[str, Any]]],
    chunk_size: int, label: str,
) -> float:
    """Insert the sessions and their messages, one transaction per chunk; returns seconds."""
    async with db.transaction() as conn:
        existing = (await conn.execute(select(func.count()).select_from(messages))).scalar_one()
    if existing:
        raise SystemExit(f"{label}: the database already holds {existing:,} messages; "
                         "give an empty one")
    total = sum(len(r) for r in rounds)
    began = time.perf_counter()
    async with db.transaction() as conn:
        await conn.execute(sessions.insert(), heads)
    done = 0
    for chunk in chunked(rounds, chunk_size):
        async with db.transaction() as conn:
            await conn.execute(messages.insert(), chunk)
        done += len(chunk)
        progress(f"{label}: loaded {done:,}/{total:,} messages", final=done == total)
    async with db.transaction() as conn:  # where the (pre-folded) summaries stop
        last_folded = (
            select(func.max(messages.c.id))
            .where(messages.c.user_id == sessions.c.user_id,
                   messages.c.session_id == sessions.c.session_id,
                   messages.c.summarized.is_(True))
            .scalar_subquery()
        )
        await conn.execute(sessions.update().values(summarized_through=last_folded))
    if db.dialect == "postgresql":
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM (ANALYZE) messages, sessions")
            with contextlib.suppress(DBAPIError):  # needs superuser or pg_checkpoint
                await conn.exec_driver_sql("CHECKPOINT")
    return time.perf_counter() - began


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
    concurrent: dict[str, float] = field(default_factory=dict)
    sequential: dict[str, float] = field(default_factory=dict)
    ratio_p50: float = 0.0  # sequential p50 / concurrent p50, same run
    steps_concurrent: dict[str, float] = field(default_factory=dict)  # p50 ms per step
    steps_sequential: dict[str, float] = field(default_factory=dict)
    record: dict[str, float] = field(default_factory=dict)
    record_jobs: int = 0
    drain_seconds: float | None = None  # background extraction catching up after record
    server: dict[str, str] = field(default_factory=dict)
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)


def step_medians(timings: Sequence[dict[str, float]]) -> dict[str, float]:
    return {s: statistics.median(t.get(s, 0.0) for t in timings) for s in STEPS}


def run_backend(label: str, url: str, data: Dataset, args: argparse.Namespace,
                embedder: Embedder) -> Result:
    result = Result(label, data.users, data.per_user, min(args.sessions, data.users),
                    args.messages, loadavg_before=[round(x, 2) for x in os.getloadavg()])
    settings = Settings()
    memory = TrueMem(url, embedder=embedder, settings=settings)
    try:
        memory.list_memories("bench-open")  # opens the store: migrations, embedder check
        core, loop = memory._core, memory._loop
        db = core.db
        result.server = loop.run(server_versions(db))
        result.memories_load_seconds = loop.run(bulk_load(db, data, args.chunk, label))
        chosen = pick_sessions(data, args.sessions, args.seed + 3)
        heads, rounds = session_rows(chosen, args.messages, settings.recent_messages,
                                     core.tokens, args.seed + 4)
        result.sessions_load_seconds = loop.run(
            load_sessions(db, heads, rounds, args.chunk, label))
        state = memory.get_session(chosen[0].user_id, chosen[0].session_id)
        folded = args.messages > settings.recent_messages
        if (len(state.recent) != min(args.messages, settings.recent_messages)
                or (state.summary is not None) != folded
                or (state.summarized_through is not None) != folded):
            raise RuntimeError(f"{label}: the loaded session does not read back as expected")

        rng = random.Random(args.seed + 5)

        def pick() -> tuple[Session, str]:
            return rng.choice(chosen), rng.choice(QUERIES)

        def concurrent() -> tuple[float, dict[str, float]]:
            s, query = pick()
            began = time.perf_counter()
            context = memory.get_context(s.user_id, s.session_id, query)
            return time.perf_counter() - began, context.timings

        def sequential() -> tuple[float, dict[str, float]]:
            s, query = pick()
            began = time.perf_counter()
            context = loop.run(core.get_context(s.user_id, s.session_id, query,
                                                concurrent=False))
            return time.perf_counter() - began, context.timings

        wall: dict[str, list[float]] = {"concurrent": [], "sequential": []}
        steps: dict[str, list[dict[str, float]]] = {"concurrent": [], "sequential": []}
        total = args.warmup + args.queries
        began_all = time.perf_counter()
        for n in range(total):
            order = ((concurrent, "concurrent"), (sequential, "sequential"))
            for call, mode in order if n % 2 == 0 else order[::-1]:
                seconds, timings = call()
                if n >= args.warmup:
                    wall[mode].append(seconds)
                    steps[mode].append(timings)
            if (n + 1) % 50 == 0 or n + 1 == total:
                progress(f"{label}: {n + 1:,}/{total:,} pairs of get_context "
                         f"({time.perf_counter() - began_all:.0f}s)", final=n + 1 == total)
        result.concurrent = percentiles(wall["concurrent"])
        result.sequential = percentiles(wall["sequential"])
        result.ratio_p50 = result.sequential["p50_ms"] / result.concurrent["p50_ms"]
        result.steps_concurrent = step_medians(steps["concurrent"])
        result.steps_sequential = step_medians(steps["sequential"])

        # record last: the extraction it queues changes the store in the background
        record: list[float] = []
        total = args.warmup + args.records
        for n in range(total):
            s = rng.choice(chosen)
            said, reply = chat_line(rng, USER_LINES), chat_line(rng, ASSISTANT_LINES)
            began = time.perf_counter()
            recorded = memory.record(s.user_id, s.session_id, said, reply)
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
            progress(f"{label}: background jobs not done: {exc}", final=True)
        result.loadavg_after = [round(x, 2) for x in os.getloadavg()]
    finally:
        memory.close()
    return result


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def render(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = [tuple(header), *(tuple(row) for row in body)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = [
        "| " + " | ".join(cell.rjust(w) if i > 1 else cell.ljust(w)
                          for i, (cell, w) in enumerate(zip(line, widths, strict=True))) + " |"
        for line in lines
    ]
    rule = "|" + "|".join("-" * (w + 1) + ":" if i > 1 else "-" * (w + 2)
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([rendered[0], rule, *rendered[1:]])


def tables(results: Sequence[Result]) -> str:
    context_rows = []
    for r in results:
        for mode, wall, steps in (("concurrent", r.concurrent, r.steps_concurrent),
                                  ("sequential", r.sequential, r.steps_sequential)):
            context_rows.append((
                r.backend, mode, f"{wall['n']:,}", f"{wall['p50_ms']:.2f}",
                f"{wall['p95_ms']:.2f}", *(f"{steps[s]:.2f}" for s in STEPS)))
    record_rows = [
        (r.backend, "record", f"{r.record['n']:,}", f"{r.record['p50_ms']:.2f}",
         f"{r.record['p95_ms']:.2f}", f"{r.record_jobs:,}",
         "not done" if r.drain_seconds is None else f"{r.drain_seconds:.1f}")
        for r in results
    ]
    ratios = "\n".join(
        f"{r.backend}: sequential/concurrent p50 = {r.ratio_p50:.2f} "
        f"({r.sequential['p50_ms']:.2f} / {r.concurrent['p50_ms']:.2f} ms)" for r in results)
    return "\n\n".join([
        "get_context (wall ms of the call; step columns: p50 of Context.timings, ms)",
        render(("backend", "steps", "n", "p50", "p95", *(f"{s} p50" for s in STEPS)),
               context_rows),
        ratios,
        "record (wall ms of the call only: commit messages + job rows, hand the jobs to the "
        "in-process broker;\nextraction then runs in the background on the in-process "
        "worker, not timed here; drain = time it then needed to catch up)",
        render(("backend", "call", "n", "p50", "p95", "jobs queued", "drain s"), record_rows),
    ])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="get_context (concurrent vs sequential steps) and record latency.")
    parser.add_argument("--users", type=int, default=1000, help="number of users (N)")
    parser.add_argument("--per-user", type=int, default=150, help="memories per user (M)")
    parser.add_argument("--sessions", type=int, default=50,
                        help="sampled users that get a session")
    parser.add_argument("--messages", type=int, default=200, help="messages per session")
    parser.add_argument("--queries", type=int, default=300,
                        help="measured get_context calls per mode, after warm-up")
    parser.add_argument("--records", type=int, default=300,
                        help="measured record calls, after warm-up")
    parser.add_argument("--warmup", type=int, default=30,
                        help="unmeasured calls first (pairs for get_context)")
    parser.add_argument("--backends", default="sqlite,postgres",
                        help="comma-separated: sqlite, postgres")
    parser.add_argument("--database-url",
                        help="an existing, empty PostgreSQL database (default: throw-away)")
    parser.add_argument("--distinct-texts", type=int, default=8000,
                        help="distinct memory texts to embed (the pool users draw from)")
    parser.add_argument("--chunk", type=int, default=5000, help="rows per insert transaction")
    parser.add_argument("--drain-timeout", type=float, default=600.0,
                        help="seconds to wait for the background jobs after record")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", help="where the SQLite file goes (default: system temp)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results here")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgres"} or not backends:
        parser.error(f"--backends takes sqlite and/or postgres, not {args.backends!r}")
    for name in ("users", "per_user", "sessions", "messages", "queries", "records", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be at least 0")
    args.backends = backends
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    embedder = default_embedder(Settings().embedding_threads)  # what TrueMem uses by default
    progress(f"dataset: {args.users:,} users x {args.per_user} memories; {args.sessions} "
             f"sessions x {args.messages} messages", final=True)
    data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)

    results: list[Result] = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-context-", dir=args.tmpdir) as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "context.db"), data,
                                           args, embedder))
        else:
            with postgres_url(args.database_url) as url:
                results.append(run_backend("postgres", url, data, args, embedder))

    settings = Settings()
    print(f"\nmachine: {machine['nproc']} x {machine['cpu']}, {machine['ram_gib']} GiB RAM, "
          f"{machine['os']}, Python {machine['python']}, SQLite {machine['sqlite']}, "
          f"onnxruntime {machine['onnxruntime']}, SQLAlchemy {machine['sqlalchemy']}, "
          f"psycopg {machine['psycopg']}")
    print(f"load average at start {machine['loadavg_at_start']}; per backend before -> after: "
          + ", ".join(f"{r.backend} {r.loadavg_before} -> {r.loadavg_after}"
                      for r in results))
    for r in results:
        if r.server:
            print(f"{r.backend}: PostgreSQL {r.server['postgresql']}, "
                  f"pgvector {r.server['pgvector']}")
    print(f"dataset: {data.users:,} users x {data.per_user} memories = {data.rows:,} rows "
          f"({embedder.model_name}); {results[0].sessions} sessions x {args.messages} "
          f"messages (all but the last {settings.recent_messages} folded into a summary); "
          f"search k={settings.search_k}; {args.queries:,} calls per mode after "
          f"{args.warmup} warm-up pairs, {args.records:,} record calls after {args.warmup}")
    print("load s: " + ", ".join(
        f"{r.backend} memories {r.memories_load_seconds:.1f} + sessions "
        f"{r.sessions_load_seconds:.1f}" for r in results) + "\n")
    print(tables(results))
    if args.json:
        args.json.write_text(json.dumps({
            "machine": machine,
            "config": {k: (str(v) if isinstance(v, Path) else v)
                       for k, v in vars(args).items() if k != "database_url"},
            "settings": {"search_k": settings.search_k,
                         "recent_messages": settings.recent_messages,
                         "summary_token_threshold": settings.summary_token_threshold},
            "dataset": {"users": data.users, "per_user": data.per_user, "rows": data.rows,
                        "distinct_texts": len(data.facts), "model": embedder.model_name},
            "results": [asdict(r) for r in results],
        }, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
