"""Scale benchmark of the core engine: N users x M memories on SQLite and PostgreSQL.

For each backend it bulk-loads a synthetic but realistic store (``--users`` x
``--per-user`` memories, default 1,000 x 150) and reports:

* load: wall time of the bulk insert (plus ``VACUUM (ANALYZE)`` and ``CHECKPOINT`` on
  PostgreSQL), total and rows/s;
* search: end to end through the public ``TrueMem.search`` (random user, short query);
* embed: the default embedder alone on one short query;
* db: the database part of search alone, ``MemoryService.search(..., vector=...)`` with a
  precomputed vector (the backend's ``nearest`` plus the row fetch; with hybrid search, also
  the lexical channels unless ``--mode vector``), timed on the core's loop.

Memory texts come from templates ("Works as a nurse at Siemens", "Lives in Lyon", ...).
The distinct texts are embedded once with the default embedder and the rows are written
with SQLAlchemy Core ``executemany`` in chunks (one transaction each), laid out the way
they would accrue in production: interleaved over time across users, not user by user.
The ``add_memory`` path (dedup, pruning, one embedding per call) is not used for loading.

    .venv/bin/python benchmarks/scale.py                        # 1,000 x 150, both backends
    .venv/bin/python benchmarks/scale.py --users 10000 --json /tmp/scale.json
    .venv/bin/python benchmarks/scale.py --backends postgres \\
        --database-url postgresql://user:pw@localhost/truemem_bench

Without ``--database-url`` a throw-away PostgreSQL (with pgvector) is started with the
test helpers in ``tests/services.py``; the database given with ``--database-url`` must
have no memories yet.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import random
import re
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Text, bindparam, cast, event, func, select, text
from sqlalchemy.exc import DBAPIError

from truemem_core import Settings, TrueMem, default_embedder
from truemem_core.embeddings import Embedder, Vector, normalize
from truemem_core.memory.service import MemoryService
from truemem_core.storage.database import Database
from truemem_core.storage.schema import memories

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- #
# Synthetic data
# --------------------------------------------------------------------------- #

SLOTS: dict[str, tuple[str, ...]] = {
    "job": ("nurse", "software engineer", "teacher", "data analyst", "architect", "pharmacist",
            "lawyer", "chef", "product manager", "electrician", "graphic designer",
            "accountant", "physiotherapist", "journalist", "civil engineer", "barista",
            "veterinarian", "sales manager", "researcher", "pilot"),
    "company": ("Siemens", "a small startup", "the city hospital", "Google", "a law firm",
                "the public library", "Airbus", "a family bakery", "Deloitte", "Spotify",
                "a local school", "Renault", "IKEA", "the university", "a marketing agency"),
    "city": ("Lyon", "Madrid", "Berlin", "Lisbon", "Osaka", "Toronto", "Seattle", "Porto",
             "Buenos Aires", "Mexico City", "Barcelona", "Munich", "Dublin", "Melbourne",
             "Kyoto", "Valencia", "Boston", "Austin", "Copenhagen", "Milan"),
    "country": ("Japan", "Portugal", "Mexico", "Italy", "Canada", "Norway", "Argentina",
                "Greece", "Vietnam", "Morocco", "Iceland", "Chile", "Peru", "Scotland",
                "New Zealand"),
    "hobby": ("hiking", "chess", "rock climbing", "baking sourdough", "photography",
              "gardening", "painting watercolours", "board games", "cycling", "birdwatching",
              "knitting", "surfing", "woodworking", "yoga", "running", "video games",
              "pottery", "fishing", "salsa dancing", "sailing"),
    "dish": ("ramen", "paella", "lasagna", "tacos al pastor", "pad thai", "sushi", "moussaka",
             "pho", "shakshuka", "risotto", "empanadas", "biryani", "ceviche", "pierogi",
             "bibimbap"),
    "food": ("pork", "red meat", "gluten", "dairy", "spicy food", "mushrooms", "seafood",
             "cilantro", "eggs", "sugar"),
    "allergen": ("peanuts", "shellfish", "penicillin", "cats", "pollen", "latex", "bee stings",
                 "tree nuts", "soy", "sesame"),
    "language": ("Spanish", "French", "German", "Japanese", "Portuguese", "Italian",
                 "Mandarin", "Korean", "Dutch", "Arabic", "Swedish", "Russian"),
    "prog": ("Python", "Rust", "Go", "TypeScript", "Java", "Kotlin", "C++", "Elixir", "Ruby",
             "Scala"),
    "tool": ("PostgreSQL", "Docker", "Kubernetes", "Excel", "Figma", "Jira", "VS Code",
             "Terraform", "Tableau", "Notion", "AutoCAD", "Salesforce"),
    "pet": ("dog", "cat", "parrot", "rabbit", "turtle", "hamster", "golden retriever",
            "tabby cat"),
    "name": ("Ana", "Luis", "Marta", "Kenji", "Sofia", "Tom", "Ines", "Pedro", "Yuki", "Omar",
             "Clara", "David", "Lucia", "Mateo", "Emma", "Noah", "Olivia", "Hugo"),
    "relation": ("sister", "brother", "mother", "father", "partner", "best friend", "daughter",
                 "son", "grandmother", "cousin"),
    "instrument": ("piano", "guitar", "violin", "drums", "cello", "saxophone", "ukulele",
                   "flute"),
    "sport": ("tennis", "football", "basketball", "padel", "volleyball", "badminton",
              "squash", "water polo"),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "month": ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"),
    "genre": ("jazz", "heavy metal", "classical music", "K-pop", "reggaeton", "indie rock",
              "techno", "country music", "hip hop", "bossa nova", "flamenco"),
    "drink": ("black coffee", "green tea", "a flat white", "matcha", "yerba mate",
              "orange juice", "chai"),
    "car": ("Toyota Corolla", "Tesla Model 3", "Volkswagen Golf", "Honda Civic",
            "Renault Clio", "Ford Focus", "an old Volvo", "electric scooter"),
    "degree": ("computer science", "law", "medicine", "economics", "architecture",
               "biology", "philosophy", "mechanical engineering", "history", "nursing"),
    "university": ("the University of Lisbon", "MIT", "Complutense University",
                   "the University of Toronto", "TU Munich", "Kyoto University",
                   "the Sorbonne", "UNAM"),
    "project": ("a mobile app for recipes", "a data pipeline migration",
                "the quarterly budget report", "a home renovation", "a PhD thesis",
                "a Kubernetes upgrade", "an online shop", "a research paper on climate",
                "a wedding plan", "a podcast about history"),
    "format": ("short bullet points", "a single paragraph", "step-by-step lists",
               "code first, explanation after", "formal English", "plain Spanish"),
    "topic": ("Roman history", "machine learning", "stoicism", "astronomy", "nutrition",
              "personal finance", "urban planning", "the French revolution", "mycology"),
    "race": ("marathon", "half marathon", "triathlon", "10K race", "cycling sportive"),
}

# (template, importance, kind); importance follows the spec's scale (5 critical ... 1 minor)
TEMPLATES: tuple[tuple[str, int, str], ...] = (
    ("Works as a {job} at {company}", 4, "semantic"),
    ("Lives in {city}", 4, "semantic"),
    ("Grew up in {country}", 4, "semantic"),
    ("Studied {degree} at {university}", 4, "semantic"),
    ("Is allergic to {allergen}", 5, "semantic"),
    ("Does not eat {food}", 4, "semantic"),
    ("Wants answers as {format}", 5, "semantic"),
    ("Never schedule meetings on {weekday}", 5, "semantic"),
    ("Speaks {language} fluently", 4, "semantic"),
    ("Birthday of their {relation} {name} is in {month}", 4, "semantic"),
    ("Likes {hobby} on weekends", 3, "semantic"),
    ("Enjoys {hobby} with their {relation}", 3, "semantic"),
    ("Favourite food is {dish}", 3, "semantic"),
    ("Prefers {prog} for backend work", 3, "semantic"),
    ("Uses {tool} at work every day", 3, "semantic"),
    ("Has a {pet} named {name}", 3, "semantic"),
    ("Their {relation} {name} lives in {city}", 3, "semantic"),
    ("Plays the {instrument}", 3, "semantic"),
    ("Plays {sport} every {weekday}", 3, "semantic"),
    ("Listens mostly to {genre}", 3, "semantic"),
    ("Is learning {language} for a trip to {country}", 2, "semantic"),
    ("Is currently working on {project}", 2, "semantic"),
    ("Is reading a book about {topic}", 2, "semantic"),
    ("Is training for a {race} in {city}", 2, "semantic"),
    ("Drinks {drink} every morning", 2, "semantic"),
    ("Drives a {car}", 2, "semantic"),
    ("Is planning a trip to {country} in {month}", 2, "episodic"),
    ("Visited {city} with their {relation} in {month}", 2, "episodic"),
    ("Cooked {dish} for friends last {weekday}", 1, "episodic"),
    ("Asked for help debugging {prog} code for {project}", 1, "episodic"),
    ("Had a call with {name} about {project} on {weekday}", 1, "episodic"),
    ("Went to a {genre} concert in {city}", 1, "episodic"),
)

QUERIES: tuple[str, ...] = (
    "where do I live?", "what do I do for work", "my favourite food", "any allergies?",
    "do I have pets", "which languages do I speak", "what are my hobbies",
    "what music do I like", "when is my sister's birthday", "what car do I drive",
    "how should you format answers", "what am I working on right now",
    "which programming language do I prefer", "what tools do I use at work",
    "am I planning any trips?", "what sports do I play", "what did I study",
    "where did I grow up", "what do I drink in the morning", "what can't I eat",
    "what should I cook tonight", "recommend a weekend activity", "help me plan my week",
    "which instrument do I play", "what book am I reading", "am I training for something",
    "who is Ana", "what did we talk about on Tuesday", "suggest a restaurant for dinner",
    "gift ideas for my partner", "is it ok to schedule a meeting on Friday",
    "tell me about my family", "what's my dog's name", "any upcoming concerts I'd like",
    "help me debug my code", "plan a trip to Japan", "what should I know about me",
    "write a short bio of me", "recommend a podcast", "what time zone am I in",
)


@dataclass(frozen=True, slots=True)
class Fact:
    text: str
    importance: int
    kind: str


def fact_pool(size: int, seed: int) -> list[Fact]:
    """``size`` distinct facts drawn from the templates (deterministic for a seed)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    pool: list[Fact] = []
    attempts = 0
    while len(pool) < size:
        attempts += 1
        if attempts > size * 50:
            raise SystemExit(f"the templates cannot produce {size} distinct texts")
        template, importance, kind = rng.choice(TEMPLATES)
        filled = template.format_map(_Filler(rng))
        if filled not in seen:
            seen.add(filled)
            pool.append(Fact(filled, importance, kind))
    return pool


class _Filler(dict[str, str]):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self._rng = rng

    def __missing__(self, key: str) -> str:
        value = self._rng.choice(SLOTS[key])
        self[key] = value
        return value


@dataclass
class Dataset:
    users: int
    per_user: int
    facts: list[Fact]
    vectors: Vector  # (len(facts), dimension), L2-normalised
    assignment: np.ndarray[Any, np.dtype[np.int32]]  # (users, per_user) fact indices
    model_name: str
    embed_seconds: float
    seed: int

    @property
    def rows(self) -> int:
        return self.users * self.per_user

    def user_id(self, index: int) -> str:
        return f"user-{index:05d}"

    def chunks(
        self, size: int, vector_value: Callable[[int], Any], vector_key: str
    ) -> Iterator[list[dict[str, Any]]]:
        """Rows in insertion order: round r holds memory r of every user (time-interleaved)."""
        rng = random.Random(self.seed + 1)
        start = datetime.now(UTC) - timedelta(days=365)
        step = timedelta(days=365) / max(self.rows, 1)
        chunk: list[dict[str, Any]] = []
        n = 0
        for r in range(self.per_user):
            for u in range(self.users):
                fact_index = int(self.assignment[u, r])
                fact = self.facts[fact_index]
                created = start + step * n
                n += 1
                source = "explicit" if fact.importance == 5 else rng.choice(
                    ("extracted", "extracted", "extracted", "manual"))
                chunk.append({
                    "id": str(uuid.uuid4()),
                    "user_id": self.user_id(u),
                    "text": fact.text,
                    "importance": fact.importance,
                    "kind": fact.kind,
                    "source": source,
                    "state": "active",
                    "reinforcements": rng.choice((0, 0, 0, 1, 2)),
                    vector_key: vector_value(fact_index),
                    "embedding_model": self.model_name,
                    "source_message_id": None,
                    "created_at": created,
                    "updated_at": created,
                })
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk


def build_dataset(
    users: int, per_user: int, distinct: int, embedder: Embedder, seed: int
) -> Dataset:
    distinct = max(distinct, per_user)
    facts = fact_pool(distinct, seed)
    began = time.perf_counter()
    parts: list[Vector] = []
    batch = 512
    for i in range(0, len(facts), batch):
        parts.append(normalize(embedder.embed([f.text for f in facts[i:i + batch]])))
        done = min(i + batch, len(facts))
        progress(f"embedding distinct texts: {done:,}/{len(facts):,}", final=done == len(facts))
    vectors: Vector = np.concatenate(parts).astype(np.float32)
    embed_seconds = time.perf_counter() - began
    gen = np.random.default_rng(seed)
    assignment = np.empty((users, per_user), dtype=np.int32)
    for u in range(users):
        assignment[u] = gen.choice(len(facts), size=per_user, replace=False)
    return Dataset(users, per_user, facts, vectors, assignment, embedder.model_name,
                   embed_seconds, seed)


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #

_TTY = sys.stderr.isatty()


def progress(message: str, *, final: bool = False) -> None:
    if _TTY:
        sys.stderr.write(f"\r\033[K{message}" + ("\n" if final else ""))
    else:
        sys.stderr.write(message + "\n")
    sys.stderr.flush()


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(samples, dtype=np.float64) * 1000.0
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "mean_ms": float(ms.mean()),
        "n": len(ms),
    }


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.partition(":")[2].strip()
                break
    ram_gib = 0.0
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gib = int(line.split()[1]) / 1024**2
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(ram_gib, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "onnxruntime": package_version("onnxruntime"),
        "sqlalchemy": package_version("sqlalchemy"),
        "psycopg": package_version("psycopg"),
        "numpy": package_version("numpy"),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


# --------------------------------------------------------------------------- #
# Benchmark of one backend
# --------------------------------------------------------------------------- #


@dataclass
class Result:
    backend: str
    users: int
    per_user: int
    rows: int
    load_seconds: float = 0.0
    rows_per_second: float = 0.0
    store_bytes: int = 0
    search: dict[str, float] = field(default_factory=dict)
    embed: dict[str, float] = field(default_factory=dict)
    db: dict[str, float] = field(default_factory=dict)
    server: dict[str, str] = field(default_factory=dict)
    plan: str = ""
    loadavg_after: list[float] = field(default_factory=list)  # other load on the machine


async def bulk_load(db: Database, data: Dataset, chunk_size: int, label: str) -> float:
    """Insert the dataset with executemany, one transaction per chunk; returns seconds."""
    async with db.transaction() as conn:
        existing = (await conn.execute(select(func.count()).select_from(memories))).scalar_one()
    if existing:
        raise SystemExit(f"{label}: the database already holds {existing:,} memories; "
                         "give an empty one")
    if db.dialect == "postgresql":
        # Render each distinct vector once with the schema's own bind processor and cast it
        # in SQL: formatting 384 floats per row in Python would dominate the load.
        render = memories.c.embedding.type.dialect_impl(db.engine.dialect).bind_processor(
            db.engine.dialect)
        assert render is not None
        literals = [render(v) for v in data.vectors]
        stmt = memories.insert().values(
            embedding=cast(bindparam("embedding_literal", type_=Text()),
                           memories.c.embedding.type))
        rows = data.chunks(chunk_size, literals.__getitem__, "embedding_literal")
    else:
        stmt = memories.insert()
        rows = data.chunks(chunk_size, data.vectors.__getitem__, "embedding")
    began = time.perf_counter()
    done = 0
    last_report = 0.0
    for chunk in rows:
        async with db.transaction() as conn:
            await conn.execute(stmt, chunk)
        done += len(chunk)
        elapsed = time.perf_counter() - began
        if done == data.rows or elapsed - last_report >= (0.5 if _TTY else 10.0):
            last_report = elapsed
            rate = done / elapsed if elapsed else 0.0
            eta = (data.rows - done) / rate if rate else 0.0
            progress(f"{label}: loaded {done:,}/{data.rows:,} rows ({100 * done / data.rows:.0f}%)"
                     f", {rate:,.0f} rows/s, ETA {eta:,.0f}s", final=done == data.rows)
    if db.dialect == "postgresql":
        # Steady state, as a production table would be: statistics, visibility map and
        # a checkpoint, so no autovacuum or checkpoint of the fresh load runs while we measure.
        progress(f"{label}: VACUUM (ANALYZE) memories; CHECKPOINT", final=True)
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM (ANALYZE) memories")
            with contextlib.suppress(DBAPIError):  # needs superuser or pg_checkpoint
                await conn.exec_driver_sql("CHECKPOINT")
    return time.perf_counter() - began


async def store_size(db: Database) -> int:
    async with db.transaction() as conn:
        if db.dialect == "postgresql":
            query = "SELECT pg_total_relation_size('memories')"
        else:
            query = ("SELECT page_count * page_size FROM pragma_page_count(), "
                     "pragma_page_size()")
        return int((await conn.execute(text(query))).scalar_one())


async def server_versions(db: Database) -> dict[str, str]:
    if db.dialect != "postgresql":
        return {}
    async with db.transaction() as conn:
        server = (await conn.execute(text("SHOW server_version"))).scalar_one()
        pgvector = (await conn.execute(text(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"))).scalar_one()
        buffers = (await conn.execute(text("SHOW shared_buffers"))).scalar_one()
    return {"postgresql": str(server), "pgvector": str(pgvector),
            "shared_buffers": str(buffers)}


async def explain_search(
    service: MemoryService, user: str, query: str, vector: Vector, options: dict[str, Any]
) -> str:
    """The plan of the statements one ``search`` issues (captured, then explained)."""
    db = service.db
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        captured.append((statement, parameters))

    event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
    try:
        await service.search(user, query, vector=vector, **options)
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", capture)
    prefix = ("EXPLAIN (ANALYZE, BUFFERS) " if db.dialect == "postgresql"
              else "EXPLAIN QUERY PLAN ")
    out: list[str] = []
    async with db.transaction() as conn:
        for statement, parameters in captured:
            if not statement.lstrip().upper().startswith("SELECT"):
                continue
            out.append(" ".join(statement.split()))
            result = await conn.exec_driver_sql(prefix + statement, parameters)
            out.extend("  " + " | ".join(str(c) for c in row) for row in result)
    # the query vector is spelled out in the plan: shorten it
    plan = re.sub(r"'\[[^\]]{80,}\]'", "'[...]'", "\n".join(out))
    return re.sub(r"'\{[^}]{80,}\}'", "'{...}'", plan)


async def time_db(
    service: MemoryService, user: str, query: str, vector: Vector, options: dict[str, Any]
) -> float:
    """Seconds of ``MemoryService.search`` with a precomputed vector, timed on the core's loop."""
    began = time.perf_counter()
    hits = await service.search(user, query, vector=vector, **options)
    elapsed = time.perf_counter() - began
    if not hits:
        raise RuntimeError(f"search returned nothing for {user}")
    return elapsed


async def memory_service(core: Any) -> MemoryService:
    """The core's ``MemoryService`` (``ready()`` returns it, or an object holding it)."""
    opened = await core.ready()
    if isinstance(opened, MemoryService):
        return opened
    service: MemoryService = opened.memories
    return service


def run_backend(
    label: str, url: str, data: Dataset, args: argparse.Namespace, embedder: Embedder,
    query_vectors: dict[str, Vector],
) -> Result:
    result = Result(label, data.users, data.per_user, data.rows)
    memory = TrueMem(url, embedder=embedder, settings=Settings())
    try:
        memory.list_memories("bench-open")  # opens the store: migrations, embedder check
        core = memory._core
        loop = memory._loop
        service = loop.run(memory_service(core))
        db = core.db
        result.server = loop.run(server_versions(db))
        result.load_seconds = loop.run(bulk_load(db, data, args.chunk, label))
        result.rows_per_second = data.rows / result.load_seconds
        result.store_bytes = loop.run(store_size(db))

        rng = random.Random(args.seed + 2)
        expected = min(service.settings.search_k, data.per_user)
        options: dict[str, Any] = {"mode": args.mode} if args.mode else {}

        def pick() -> tuple[str, str]:
            return data.user_id(rng.randrange(data.users)), rng.choice(QUERIES)

        # The three measurements are interleaved (and each draws its own user), so that
        # load from elsewhere on the machine affects them alike and no cache is pre-warmed.
        total = args.warmup + args.queries
        search: list[float] = []
        embed: list[float] = []
        database: list[float] = []
        began_all = time.perf_counter()
        for n in range(total):
            user, query = pick()
            began = time.perf_counter()
            hits = memory.search(user, query, **options)
            search.append(time.perf_counter() - began)
            if len(hits) != expected:
                raise RuntimeError(f"search returned {len(hits)} hits for {user}, not {expected}")

            _, query = pick()
            began = time.perf_counter()
            normalize(embedder.embed([query]))
            embed.append(time.perf_counter() - began)

            user, query = pick()
            database.append(loop.run(
                time_db(service, user, query, query_vectors[query], options)))
            if (n + 1) % 100 == 0 or n + 1 == total:
                progress(f"{label}: {n + 1:,}/{total:,} rounds of search / embed / db "
                         f"({time.perf_counter() - began_all:.0f}s)", final=n + 1 == total)
        result.search = percentiles(search[args.warmup:])
        result.embed = percentiles(embed[args.warmup:])
        result.db = percentiles(database[args.warmup:])

        result.loadavg_after = [round(x, 2) for x in os.getloadavg()]
        user, query = pick()
        result.plan = loop.run(
            explain_search(service, user, query, query_vectors[query], options))
    finally:
        memory.close()
    return result


@contextlib.contextmanager
def postgres_url(existing: str | None) -> Iterator[str]:
    if existing:
        yield existing
        return
    sys.path.insert(0, str(ROOT / "tests"))
    services = importlib.import_module("services")
    progress("postgres: starting a throw-away server (tests/services.py)", final=True)
    with services.postgres_database() as url:
        yield str(url)


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def table(results: Sequence[Result]) -> str:
    header = ("backend", "users", "rows", "load s", "rows/s", "store MB",
              "search p50", "search p95", "embed p50", "embed p95", "db p50", "db p95")
    lines = [header]
    for r in results:
        lines.append((
            r.backend, f"{r.users:,}", f"{r.rows:,}", f"{r.load_seconds:,.1f}",
            f"{r.rows_per_second:,.0f}", f"{r.store_bytes / 1e6:,.0f}",
            f"{r.search['p50_ms']:.2f}", f"{r.search['p95_ms']:.2f}",
            f"{r.embed['p50_ms']:.2f}", f"{r.embed['p95_ms']:.2f}",
            f"{r.db['p50_ms']:.2f}", f"{r.db['p95_ms']:.2f}",
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = [
        "| " + " | ".join(cell.rjust(w) if i else cell.ljust(w)
                          for i, (cell, w) in enumerate(zip(line, widths, strict=True))) + " |"
        for line in lines
    ]
    rule = "|" + "|".join("-" * (w + 1) + ":" if i else "-" * (w + 2)
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([rendered[0], rule, *rendered[1:]])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Scale benchmark of the core engine (load, search, embed, db latency).")
    parser.add_argument("--users", type=int, default=1000, help="number of users (N)")
    parser.add_argument("--per-user", type=int, default=150, help="memories per user (M)")
    parser.add_argument("--queries", type=int, default=1000,
                        help="measured searches per backend, after warm-up (>= 500)")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured searches first")
    parser.add_argument("--backends", default="sqlite,postgres",
                        help="comma-separated: sqlite, postgres")
    parser.add_argument("--database-url",
                        help="an existing, empty PostgreSQL database (default: throw-away)")
    parser.add_argument("--distinct-texts", type=int, default=8000,
                        help="distinct memory texts to embed (the pool users draw from)")
    parser.add_argument("--chunk", type=int, default=5000, help="rows per insert transaction")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", help="where the SQLite file goes (default: system temp)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results here")
    parser.add_argument("--plan", action="store_true", help="print the query plans")
    parser.add_argument("--mode", help="search mode passed to search() (cores with hybrid "
                        "search: hybrid, vector, ...; default: the core's default)")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"sqlite", "postgres"}
    if unknown or not backends:
        parser.error(f"--backends takes sqlite and/or postgres, not {args.backends!r}")
    if args.users < 1 or args.per_user < 1:
        parser.error("--users and --per-user must be at least 1")
    if args.queries < 500:
        parser.error("--queries must be at least 500")
    args.backends = backends
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    embedder = default_embedder(Settings().embedding_threads)  # what TrueMem uses by default
    progress(f"dataset: {args.users:,} users x {args.per_user} memories, "
             f"{args.distinct_texts:,} distinct texts", final=True)
    data = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)
    query_vectors = dict(zip(QUERIES, normalize(embedder.embed(list(QUERIES))), strict=True))

    results: list[Result] = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-scale-", dir=args.tmpdir) as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "scale.db"), data, args,
                                           embedder, query_vectors))
        else:
            with postgres_url(args.database_url) as url:
                results.append(run_backend("postgres", url, data, args, embedder,
                                           query_vectors))

    print(f"\nmachine: {machine['nproc']} x {machine['cpu']}, {machine['ram_gib']} GiB RAM, "
          f"Python {machine['python']}, SQLite {machine['sqlite']}, "
          f"onnxruntime {machine['onnxruntime']}")
    print(f"load average at start {machine['loadavg_at_start']}, after each backend: "
          + ", ".join(f"{r.backend} {r.loadavg_after}" for r in results))
    for r in results:
        if r.server:
            print(f"{r.backend}: PostgreSQL {r.server['postgresql']}, "
                  f"pgvector {r.server['pgvector']}, shared_buffers {r.server['shared_buffers']}")
    print(f"dataset: {data.users:,} users x {data.per_user} memories = {data.rows:,} rows; "
          f"{len(data.facts):,} distinct texts embedded in {data.embed_seconds:.1f}s "
          f"({embedder.model_name}); search k={Settings().search_k}"
          f"{f', mode={args.mode}' if args.mode else ''}; "
          f"{args.queries:,} queries after {args.warmup} warm-up; latencies in ms\n")
    print(table(results))
    if args.plan:
        for r in results:
            print(f"\n{r.backend} plan of one search:\n{r.plan}")
    if args.json:
        args.json.write_text(json.dumps({
            "machine": machine,
            "config": {k: (str(v) if isinstance(v, Path) else v)
                       for k, v in vars(args).items() if k != "database_url"},
            "dataset": {"users": data.users, "per_user": data.per_user, "rows": data.rows,
                        "distinct_texts": len(data.facts), "model": embedder.model_name,
                        "embed_seconds": data.embed_seconds},
            "results": [asdict(r) for r in results],
        }, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
