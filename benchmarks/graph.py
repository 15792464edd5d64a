"""The knowledge graph's costs: writing a fact, and ``causes`` / ``path`` latency.

For each backend it bulk-loads ``--users`` x ``--per-user`` memories (as
``context_latency.py`` does) and, beside them, a graph per user as extraction would
leave it: one observation and one relation per memory (the memory's id as source and
evidence) over ``--entities`` typed entities per user, ``--causal`` of the relations
causal. Graph rows are bulk-inserted with SQLAlchemy Core into the tables of
``truemem_core.storage.schema``. Then it measures:

* the write cost per fact: ``apply_facts`` (``truemem_core.graph.write``, the path the
  extraction job takes) for one new memory's facts (two entities named, one observation,
  one relation), each call in its own transaction on an engine of its own, as the job
  runs it; per call and per fact (the call over its three facts: entity lookups included);
* ``memory.graph.causes(user, entity, depth=3)`` on entities with causes, and
  ``memory.graph.path(user, a, b)`` (max 6 hops, either direction) between two random entities
  of a user: wall time p50 / p95 through the public API.

    .venv/bin/python benchmarks/graph.py                      # 1,000 x 150, both backends
    .venv/bin/python benchmarks/graph.py --users 10000 --backends postgres
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import (
    SLOTS,
    Dataset,
    build_dataset,
    bulk_async_engine,
    bulk_engine,
    bulk_load,
    describe_machine,
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
from sqlalchemy import Engine, select

from truemem_core import (
    CAUSAL_TYPES,
    GraphFacts,
    ObservationSpec,
    RelationSpec,
    Settings,
    default_embedder,
)
from truemem_core.graph.names import alias_keys, norm
from truemem_core.graph.write import apply_facts
from truemem_core.storage.schema import (
    graph_entities,
    graph_observations,
    graph_relations,
    memories,
)

ENTITY_SLOTS = {"city": "place", "company": "organization", "tool": "tool", "name": "person",
                "prog": "tool", "project": "project", "country": "place", "hobby": "activity"}
PLAIN_TYPES = ("uses", "works_at", "lives_in", "knows", "likes")


@dataclass
class Result:
    backend: str
    users: int
    per_user: int
    entities_per_user: int
    graph_rows: int = 0
    load_seconds: dict[str, float] = field(default_factory=dict)
    write_call: dict[str, float] = field(default_factory=dict)
    write_fact: dict[str, float] = field(default_factory=dict)
    causes: dict[str, float] = field(default_factory=dict)
    causes_hops: float = 0.0
    path: dict[str, float] = field(default_factory=dict)
    path_found: float = 0.0
    server: dict[str, str] = field(default_factory=dict)
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)


def entity_names(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """``count`` distinct (name, type) drawn from the slots, numbered when they run out."""
    pool = [(value, kind) for slot, kind in ENTITY_SLOTS.items() for value in SLOTS[slot]]
    rng.shuffle(pool)
    return [(name if n < len(pool) else f"{name} {n // len(pool)}", kind)
            for n, (name, kind) in enumerate(pool[n % len(pool)] for n in range(count))]


def user_graph(user: str, memory_ids: Sequence[str], texts: Sequence[str], args: Any,
               rng: random.Random, now: datetime) -> dict[str, list[dict[str, Any]]]:
    """The rows of one user's graph: entities, one observation and one relation a memory."""
    names = entity_names(rng, args.entities)
    ids = [str(uuid.uuid4()) for _ in names]
    entities = [{"id": i, "user_id": user, "name": name, "norm": norm(name), "type": kind,
                 "aliases": [], "alias_keys": alias_keys(()), "source_memory_id": None,
                 "created_at": now} for i, (name, kind) in zip(ids, names, strict=True)]
    observations, relations = [], []
    for n, (memory_id, text) in enumerate(zip(memory_ids, texts, strict=True)):
        at = now - timedelta(minutes=len(memory_ids) - n)
        times = {"valid_from": at, "valid_to": None, "recorded_at": at, "invalidated_at": None}
        observations.append({"id": str(uuid.uuid4()), "user_id": user,
                             "entity_id": rng.choice(ids), "text": text, "confidence": 1.0,
                             "source_memory_id": memory_id, "source_message_id": None, **times})
        source, target = rng.sample(ids, 2)
        kind = (rng.choice(CAUSAL_TYPES) if rng.random() < args.causal
                else rng.choice(PLAIN_TYPES))
        relations.append({"id": str(uuid.uuid4()), "user_id": user, "source_id": source,
                          "type": kind, "target_id": target, "confidence": 1.0,
                          "evidence": text, "evidence_memory_ids": [memory_id],
                          "evidence_message_ids": [], **times})
    return {"entities": entities, "observations": observations, "relations": relations}


def _memories_of(engine: Engine, data: Dataset) -> Iterator[tuple[str, list[Any]]]:
    with engine.connect() as conn:
        rows = conn.execute(select(memories.c.user_id, memories.c.id, memories.c.text)
                            .order_by(memories.c.user_id, memories.c.created_at))
        user, batch = None, []
        for row in rows:
            if row.user_id != user and batch:
                yield str(user), batch
                batch = []
            user = row.user_id
            batch.append(row)
        if batch:
            yield str(user), batch


def load_graph(engine: Engine, data: Dataset, args: Any, label: str) -> int:
    """Bulk-insert every user's graph, ``args.chunk`` rows a transaction per table."""
    rng, now = random.Random(args.seed + 11), datetime.now(UTC)
    pending: dict[str, list[dict[str, Any]]] = {"entities": [], "observations": [],
                                                "relations": []}
    tables = {"entities": graph_entities, "observations": graph_observations,
              "relations": graph_relations}
    total = 0

    def flush(force: bool) -> None:
        nonlocal total
        for key, rows in pending.items():
            if rows and (force or len(rows) >= args.chunk):
                with engine.begin() as conn:
                    conn.execute(tables[key].insert(), rows)
                total += len(rows)
                rows.clear()

    for done, (user, rows) in enumerate(_memories_of(engine, data), 1):
        graph = user_graph(user, [r.id for r in rows], [r.text for r in rows], args, rng, now)
        for key, values in graph.items():
            pending[key] += values
        flush(False)
        if done % 500 == 0 or done == data.users:
            progress(f"{label}: graph of {done:,}/{data.users:,} users ({total:,} rows)",
                     final=done == data.users)
    flush(True)
    return total


def new_facts(rng: random.Random, names: Sequence[str], n: int) -> GraphFacts:
    source, target = rng.sample(list(names), 2)
    return GraphFacts(
        observations=(ObservationSpec(source, f"benchmark observation {n}"),),
        relations=(RelationSpec(source, rng.choice(PLAIN_TYPES + CAUSAL_TYPES), target,
                                evidence=f"benchmark fact {n}"),))


async def time_writes(url: str, data: Dataset, names: dict[str, list[str]], args: Any,
                      label: str) -> list[float]:
    """Seconds of each ``apply_facts`` call (one new memory's facts, one transaction)."""
    engine = bulk_async_engine(url)
    rng, seconds = random.Random(args.seed + 13), []
    users = sorted(names)
    try:
        for n in range(args.warmup + args.writes):
            user = rng.choice(users)
            facts = new_facts(rng, names[user], n)
            began = time.perf_counter()
            async with engine.begin() as conn:
                await apply_facts(conn, user, facts, source_memory_id=str(uuid.uuid4()),
                                  source_message_id=None, now=datetime.now(UTC))
            if n >= args.warmup:
                seconds.append(time.perf_counter() - began)
        progress(f"{label}: {args.writes:,} apply_facts calls", final=True)
    finally:
        await engine.dispose()
    return seconds


def sample_names(engine: Engine, data: Dataset, users: int, seed: int) -> dict[str, list[str]]:
    """Entity names of ``users`` random users; those with causes listed first per user."""
    rng = random.Random(seed)
    chosen = sorted({data.user_id(rng.randrange(data.users)) for _ in range(users)})
    e = graph_entities
    with engine.connect() as conn:
        rows = conn.execute(select(e.c.user_id, e.c.name).where(e.c.user_id.in_(chosen)))
        names: dict[str, list[str]] = {}
        for row in rows:
            names.setdefault(row.user_id, []).append(row.name)
    return names


def with_causes(engine: Engine, users: Sequence[str]) -> dict[str, list[str]]:
    e, r = graph_entities, graph_relations
    with engine.connect() as conn:
        rows = conn.execute(select(r.c.user_id, e.c.name).distinct()
                            .join(e, e.c.id == r.c.target_id)
                            .where(r.c.user_id.in_(list(users)), r.c.type.in_(CAUSAL_TYPES)))
        found: dict[str, list[str]] = {}
        for row in rows:
            found.setdefault(row.user_id, []).append(row.name)
    return found


def time_reads(memory: Any, names: dict[str, list[str]], caused: dict[str, list[str]],
               args: Any, label: str, result: Result) -> None:
    rng = random.Random(args.seed + 17)
    users = sorted(caused)
    causes, hops, paths, found = [], 0, [], 0
    for n in range(args.warmup + args.queries):
        user = rng.choice(users)
        began = time.perf_counter()
        chain = memory.graph.causes(user, rng.choice(caused[user]), depth=3)
        elapsed = time.perf_counter() - began
        a, b = rng.sample(names[user], 2)
        began = time.perf_counter()
        route = memory.graph.path(user, a, b)
        if n >= args.warmup:
            causes.append(elapsed)
            paths.append(time.perf_counter() - began)
            hops += len(chain)
            found += bool(route)
        if (n + 1) % 100 == 0:
            progress(f"{label}: {n + 1:,} causes + path calls", final=False)
    progress(f"{label}: {args.queries:,} causes + path calls", final=True)
    result.causes, result.path = percentiles(causes), percentiles(paths)
    result.causes_hops = hops / max(len(causes), 1)
    result.path_found = found / max(len(paths), 1)


def run_backend(label: str, url: str, data: Dataset, args: Any, embedder: Any) -> Result:
    result = Result(label, data.users, data.per_user, args.entities, loadavg_before=loadavg())
    memory = open_store(url, embedder, Settings())
    engine = bulk_engine(url)
    try:
        result.server = server_versions(engine)
        result.load_seconds["memories"] = bulk_load(engine, data, args.chunk, label)
        began = time.perf_counter()
        result.graph_rows = load_graph(engine, data, args, label)
        settle(engine, ("graph_entities", "graph_observations", "graph_relations"), label)
        result.load_seconds["graph"] = time.perf_counter() - began
        names = sample_names(engine, data, args.sample_users, args.seed + 19)
        caused = with_causes(engine, sorted(names))
        writes = asyncio.run(time_writes(url, data, names, args, label))
        result.write_call = percentiles(writes)
        result.write_fact = percentiles([s / 3 for s in writes])
        time_reads(memory, names, caused, args, label, result)
    finally:
        memory.close()
        engine.dispose()
    result.loadavg_after = loadavg()
    return result


def table(results: Sequence[Result]) -> str:
    rows = []
    for r in results:
        for what, p in (("apply_facts, one memory's facts", r.write_call),
                        ("  per fact (3 a call)", r.write_fact),
                        (f"causes, depth 3 ({r.causes_hops:.1f} hops)", r.causes),
                        (f"path, max 6 ({100 * r.path_found:.0f} % found)", r.path)):
            rows.append((r.backend, what, f"{p['p50_ms']:.2f}", f"{p['p95_ms']:.2f}"))
    return markdown_table(("backend", "call", "p50 ms", "p95 ms"), rows, left=2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=150, help="memories per user")
    parser.add_argument("--entities", type=int, default=50, help="entities per user")
    parser.add_argument("--causal", type=float, default=0.3,
                        help="share of the relations of a causal type")
    parser.add_argument("--writes", type=int, default=300, help="apply_facts calls timed")
    parser.add_argument("--queries", type=int, default=300, help="causes and path calls timed")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--sample-users", type=int, default=200,
                        help="users the timed calls are spread over")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="an empty PostgreSQL database to use")
    parser.add_argument("--distinct-texts", type=int, default=8000)
    parser.add_argument("--chunk", type=int, default=5000, help="rows per insert transaction")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", help="where the SQLite file goes (default: system temp)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(args.backends) - {"sqlite", "postgres"}:
        parser.error("--backends: sqlite and/or postgres")
    if args.entities < 2:
        parser.error("--entities must be at least 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    embedder = default_embedder(Settings().embedding_threads)
    progress(f"dataset: {args.users:,} users x {args.per_user} memories, a graph each")
    data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)
    results = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-graph-", dir=args.tmpdir) as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "graph.db"), data, args,
                                           embedder))
        else:
            with postgres_url(args.database_url) as url:
                results.append(run_backend("postgres", url, data, args, embedder))
    print()
    print(describe_machine(machine, {r.backend: r.server for r in results}))
    print("load average (1/5/15 min): " + ", ".join(
        f"{r.backend} {r.loadavg_before} -> {r.loadavg_after}" for r in results))
    print(f"dataset: {data.users:,} users x {data.per_user} memories; per user {args.entities} "
          f"entities, {data.per_user} observations, {data.per_user} relations "
          f"({100 * args.causal:.0f} % causal); {args.writes} writes and {args.queries} reads "
          f"over {args.sample_users} users after {args.warmup} warm-up")
    print("load s: " + ", ".join(
        f"{r.backend} memories {r.load_seconds['memories']:.0f} + graph "
        f"{r.load_seconds['graph']:.0f} ({r.graph_rows:,} rows)" for r in results) + "\n")
    print(table(results))
    write_results("graph", {
        "machine": machine, "results": [asdict(r) for r in results],
        "config": {k: (str(v) if isinstance(v, Path) else v)
                   for k, v in vars(args).items() if k != "database_url"},
    }, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
