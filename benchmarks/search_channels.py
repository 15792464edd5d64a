"""Where one hybrid ``search`` spends its time, part by part (issue #5).

SQLite: builds once a store of ``--users`` x ``--per-user`` memories with ``scale.py``'s
generator and loader and keeps it at ``--db``, so runs before and after a change measure
the same file (copy it first: opening it with a newer core migrates it). PostgreSQL
(``--postgres``): loads the same data into an empty database (``--database-url``, or a
throw-away server as in ``scale.py``) and measures in the same run. Then times
``MemoryService.search`` with a precomputed query vector (what ``get_context``'s "search"
step runs) for random (user, query) pairs and splits each call into:

* vector, keyword, trigram: the backend's channel methods;
* context: the neighbours-in-time query (``search.context``);
* fusion: the rest of ``search.run`` (RRF, pure Python);
* fetch: the rest of the call (the read transaction and the memory rows).

    .venv/bin/python benchmarks/search_channels.py --db /tmp/fts/base.db   # builds it once
    cp /tmp/fts/base.db /tmp/fts/run.db && \\
        .venv/bin/python benchmarks/search_channels.py --db /tmp/fts/run.db --queries 200
    .venv/bin/python benchmarks/search_channels.py --postgres --users 10000 --queries 600
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from scale import (
    QUERIES,
    build_dataset,
    bulk_load,
    machine_info,
    percentiles,
    postgres_url,
    progress,
)

from truemem_core import Settings, TrueMem, default_embedder
from truemem_core.embeddings import Embedder, normalize
from truemem_core.search import hybrid as search

PARTS = ("vector", "keyword", "trigram", "context", "fusion", "fetch", "search")
_CHANNELS = {"nearest": "vector", "keyword": "keyword", "trigram": "trigram"}


class _Timed:
    """The backend, recording how long each channel method took."""

    def __init__(self, backend: Any, spent: dict[str, float]) -> None:
        self._backend = backend
        self._spent = spent

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._backend, name)
        part = _CHANNELS.get(name)
        return method if part is None else _timer(method, part, self._spent)


def _timer(
    call: Callable[..., Awaitable[Any]], part: str, spent: dict[str, float]
) -> Callable[..., Awaitable[Any]]:
    async def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await call(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.perf_counter() - began
    return timed


@contextlib.contextmanager
def instrumented(db: Any, spent: dict[str, float]) -> Iterator[None]:
    run, context, backend = search.run, search.context, db.backend
    search.run = _timer(run, "run", spent)  # type: ignore[assignment]
    search.context = _timer(context, "context", spent)  # type: ignore[assignment]
    db.backend = _Timed(backend, spent)
    try:
        yield
    finally:
        search.run, search.context, db.backend = run, context, backend  # type: ignore[assignment]


def build(path: Path, args: argparse.Namespace, embedder: Embedder) -> None:
    data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        building = Path(tmp) / path.name
        memory = TrueMem(str(building), embedder=embedder, settings=Settings())
        try:
            memory.list_memories("bench-open")
            db = memory._core.db
            memory._loop.run(bulk_load(db, data, args.chunk, "sqlite"))
        finally:
            memory.close()
        building.rename(path)  # the last connection closed has checkpointed the WAL


def measure(
    url: str, args: argparse.Namespace, embedder: Embedder, *, load: bool = False
) -> dict[str, Any]:
    vectors = dict(zip(QUERIES, normalize(embedder.embed(list(QUERIES))), strict=True))
    memory = TrueMem(url, embedder=embedder, settings=Settings())
    samples: dict[str, list[float]] = {part: [] for part in PARTS}
    try:
        memory.list_memories("bench-open")  # migrates
        if load:
            data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder,
                                 args.seed)
            memory._loop.run(bulk_load(memory._core.db, data, args.chunk, "postgres"))
        service = memory._loop.run(memory._core.ready())
        service = getattr(service, "memories", service)
        rng = random.Random(args.seed + 9)
        for n in range(args.warmup + args.queries):
            user = f"user-{rng.randrange(args.users):05d}"
            query = rng.choice(QUERIES)
            spent: dict[str, float] = {}
            with instrumented(service.db, spent):
                began = time.perf_counter()
                hits = memory._loop.run(service.search(user, query, vector=vectors[query]))
                total = time.perf_counter() - began
            if not hits:
                raise RuntimeError(f"no hits for {user}")
            if n < args.warmup:
                continue
            channels = sum(spent.get(p, 0.0) for p in ("vector", "keyword", "trigram"))
            split = {p: spent.get(p, 0.0) for p in ("vector", "keyword", "trigram", "context")}
            split["fusion"] = spent["run"] - channels - split["context"]
            split["fetch"] = total - spent["run"]
            split["search"] = total
            for part, seconds in split.items():
                samples[part].append(seconds)
            if (n + 1) % 50 == 0:
                progress(f"{n + 1 - args.warmup}/{args.queries} searches")
    finally:
        memory.close()
    return {part: percentiles(s) for part, s in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--db", type=Path, help="the SQLite file (built if absent)")
    target.add_argument("--postgres", action="store_true",
                        help="load and measure an empty PostgreSQL database")
    parser.add_argument("--database-url", help="with --postgres (default: a throw-away server)")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=150)
    parser.add_argument("--distinct-texts", type=int, default=8000)
    parser.add_argument("--chunk", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    embedder = default_embedder(Settings().embedding_threads)
    if args.db and not args.db.exists():
        build(args.db, args, embedder)
        progress(f"built {args.db}", final=True)
        return 0
    load_before = [round(x, 2) for x in os.getloadavg()]
    if args.postgres:
        with postgres_url(args.database_url) as url:
            result = measure(url, args, embedder, load=True)
    else:
        result = measure(str(args.db), args, embedder)
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(f"{args.queries} searches after {args.warmup} warm-up; ms; "
          f"load average {load_before} -> {load_after}")
    print("| part | p50 | p95 |\n|---|---:|---:|")
    for part in PARTS:
        print(f"| {part} | {result[part]['p50_ms']:.2f} | {result[part]['p95_ms']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_info(), "config": {
            k: str(v) for k, v in vars(args).items() if k != "database_url"}, "parts": result,
            "loadavg": [load_before, load_after]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
