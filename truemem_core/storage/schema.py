"""The tables, as SQLAlchemy Core metadata (migrations in ``migrations/`` create them).

Vectors are ``vector`` (pgvector, no fixed dimension) on PostgreSQL and
float32 bytes on SQLite; timestamps are always timezone-aware UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
)
from sqlalchemy.types import TypeDecorator, TypeEngine, UserDefinedType

try:  # psycopg, an optional extra: registered before any connection copies its adapters
    from truemem_core.storage.pg_vectors import VectorParam
except ImportError:  # pragma: no cover - SQLite only
    VectorParam = None  # type: ignore[assignment,misc]


class _PgVector(UserDefinedType[Any]):
    """pgvector's ``vector`` without a fixed dimension (one store, one embedder)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"

    def bind_processor(self, dialect: Dialect) -> Any:
        # sent as the float32 values themselves, in pgvector's binary format (``pg_vectors``)
        return lambda value: None if value is None else VectorParam(value)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Any:
        def process(value: Any) -> Any:
            if value is None or isinstance(value, np.ndarray):
                return value
            return np.asarray(value.strip("[]").split(","), dtype=np.float32)

        return process


class EmbeddingType(TypeDecorator[Any]):
    """A float32 vector: pgvector on PostgreSQL, raw bytes elsewhere."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(_PgVector())
        return dialect.type_descriptor(LargeBinary())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return np.asarray(value, dtype=np.float32).tobytes()

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return np.frombuffer(value, dtype=np.float32)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC; always returns an aware datetime (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


Id = String(36)
UserId = String(255)
MessageId = BigInteger().with_variant(Integer(), "sqlite")  # SQLite autoincrements INTEGER only

metadata = MetaData()

store_meta = Table(
    "truemem_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

memories = Table(
    "memories",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", UserId, nullable=False),
    Column("text", Text, nullable=False),
    Column("importance", SmallInteger, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("source", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("reinforcements", Integer, nullable=False),
    Column("embedding", EmbeddingType, nullable=False),
    Column("embedding_model", String(128), nullable=False),
    Column("source_message_id", MessageId, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # adaptive importance and lifecycle (0003)
    Column("retrievals", Integer, nullable=False, server_default="0"),
    Column("last_accessed_at", UTCDateTime, nullable=True),
    Column("feedback", Integer, nullable=False, server_default="0"),
    Column("dynamic_score", Float, nullable=True),
    # bi-temporal validity: closed when a newer fact supersedes this one (0003)
    Column("valid_from", UTCDateTime, nullable=True),
    Column("valid_to", UTCDateTime, nullable=True),
    Column("invalidated_at", UTCDateTime, nullable=True),
    Column("superseded_by", Id, nullable=True),
    Index("ix_memories_user_created", "user_id", "created_at"),
    Index("ix_memories_user_state_importance", "user_id", "state", "importance"),  # 0014
    Index("ix_memories_superseded_by", "superseded_by"),  # 0022
)

memory_events = Table(
    "memory_events",
    metadata,
    Column("id", MessageId, primary_key=True, autoincrement=True),
    Column("memory_id", Id, nullable=False),
    Column("user_id", UserId, nullable=False),
    Column("action", String(16), nullable=False),
    Column("reason", Text, nullable=True),
    Column("old_text", Text, nullable=True),
    Column("new_text", Text, nullable=True),
    Column("old_importance", SmallInteger, nullable=True),
    Column("new_importance", SmallInteger, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_memory_events_user_memory", "user_id", "memory_id"),
    sqlite_autoincrement=True,
)

sessions = Table(
    "sessions",
    metadata,
    Column("user_id", UserId, primary_key=True),
    Column("session_id", UserId, primary_key=True),
    Column("summary", Text, nullable=True),
    # the last message folded into the summary: a summary job commits only if
    # it is still what the job read (optimistic concurrency, replay-safe)
    Column("summarized_through", MessageId, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

messages = Table(
    "messages",
    metadata,
    Column("id", MessageId, primary_key=True, autoincrement=True),
    Column("user_id", UserId, nullable=False),
    Column("session_id", UserId, nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("summarized", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # conversation recall: past turns are searchable as episodic memory (0004)
    Column("embedding", EmbeddingType, nullable=True),
    Column("embedding_model", String(128), nullable=True),  # NULL: before 0018 (or no vector)
    Index("ix_messages_user_session", "user_id", "session_id", "id"),
    Index("ix_messages_user_session_summarized", "user_id", "session_id", "summarized",
          "id", "tokens"),  # 0016
    sqlite_autoincrement=True,  # ids are never reused: job keys and provenance name them
)

# A long message's parts, each searched and served on its own (0020,
# ``conversation.passages``): derived from the message, which a passage repeats the
# session, role and date of, and deleted with it.
passages = Table(
    "passages",
    metadata,
    Column("id", MessageId, primary_key=True, autoincrement=True),
    Column("user_id", UserId, nullable=False),
    Column("message_id", MessageId, ForeignKey("messages.id", ondelete="CASCADE"),
           nullable=False),
    Column("session_id", UserId, nullable=False),
    Column("role", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("ordinal", Integer, nullable=False),  # its place among the message's passages
    Column("start", Integer, nullable=False),  # its first character's offset in the message
    Column("content", Text, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("embedding", EmbeddingType, nullable=True),
    Column("embedding_model", String(128), nullable=True),
    Index("ix_passages_user_session", "user_id", "session_id", "id"),
    Index("ix_passages_message", "message_id"),
    sqlite_autoincrement=True,
)

admission_rejections = Table(
    "admission_rejections",
    metadata,
    Column("id", MessageId, primary_key=True, autoincrement=True),
    Column("user_id", UserId, nullable=False),
    Column("text", Text, nullable=False),
    Column("source", String(16), nullable=False),
    Column("score", Float, nullable=False),
    Column("threshold", Float, nullable=False),
    Column("factors", JSON, nullable=False),
    Column("source_message_id", MessageId, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_admission_rejections_user_created", "user_id", "created_at"),
)

# Work that must happen after a commit (extraction, summaries): written in the
# same transaction as the messages, so a broker outage loses nothing.
jobs = Table(
    "jobs",
    metadata,
    Column("key", String(128), primary_key=True),
    Column("user_id", UserId, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_jobs_status_created", "status", "created_at"),
    Index("ix_jobs_user_kind_created", "user_id", "kind", "created_at"),  # 0022
)

# The knowledge graph (0010). Entities are unique per user by normalised name and type
# among the current ones; observations and relations are bi-temporal and never updated
# in place (valid_from/valid_to: the world; recorded_at/invalidated_at: the system).
graph_entities = Table(
    "graph_entities",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", UserId, nullable=False),
    Column("name", String(255), nullable=False),
    Column("norm", String(255), nullable=False),
    Column("type", String(64), nullable=False),
    Column("aliases", JSON, nullable=False),
    Column("alias_keys", Text, nullable=False),  # "|alias1|alias2|", normalised, for LIKE
    Column("source_memory_id", Id, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("invalidated_at", UTCDateTime, nullable=True),
    Index("ix_graph_entities_user_norm", "user_id", "norm"),
    Index("ux_graph_entities_current", "user_id", "norm", "type", unique=True,
          sqlite_where=Column("invalidated_at").is_(None),
          postgresql_where=Column("invalidated_at").is_(None)),
)

graph_observations = Table(
    "graph_observations",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", UserId, nullable=False),
    Column("entity_id", Id, nullable=False),
    Column("text", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("source_memory_id", Id, nullable=True),
    Column("source_message_id", MessageId, nullable=True),
    Column("valid_from", UTCDateTime, nullable=True),
    Column("valid_to", UTCDateTime, nullable=True),
    Column("recorded_at", UTCDateTime, nullable=False),
    Column("invalidated_at", UTCDateTime, nullable=True),
    Index("ix_graph_observations_user_entity", "user_id", "entity_id"),
)

graph_relations = Table(
    "graph_relations",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", UserId, nullable=False),
    Column("source_id", Id, nullable=False),
    Column("type", String(64), nullable=False),
    Column("target_id", Id, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("evidence", Text, nullable=True),
    Column("evidence_memory_ids", JSON, nullable=False),
    Column("evidence_message_ids", JSON, nullable=False),
    Column("valid_from", UTCDateTime, nullable=True),
    Column("valid_to", UTCDateTime, nullable=True),
    Column("recorded_at", UTCDateTime, nullable=False),
    Column("invalidated_at", UTCDateTime, nullable=True),
    Index("ix_graph_relations_user_source", "user_id", "source_id"),
    Index("ix_graph_relations_user_target", "user_id", "target_id"),
)

GRAPH_TABLES = (graph_relations, graph_observations, graph_entities)

# The LangGraph store's items (0011): a JSON document per (user, namespace, key), indexed by
# the memory ``memory_id`` (NULL: not indexed). ``namespace``: the labels joined with ".".
store_items = Table(
    "store_items",
    metadata,
    Column("user_id", UserId, primary_key=True),
    Column("namespace", String(1024), primary_key=True),
    Column("key", String(1024), primary_key=True),
    Column("value", JSON, nullable=False),
    Column("memory_id", Id, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_store_items_user_memory", "user_id", "memory_id"),
)

# Syntheses (0021): a summary of a user's related messages and memories ("session": one
# past session, ``key`` its id), with the sources whose content made it into the text
# and when the first and last of them were said. Searchable by meaning and by words
# (PostgreSQL: a generated ``search_vector``; SQLite: ``syntheses_fts``, see 0021).
syntheses = Table(
    "syntheses",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", UserId, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("key", UserId, nullable=False),
    Column("part", Integer, nullable=False, server_default="0"),
    Column("text", Text, nullable=False),
    Column("message_ids", JSON, nullable=False),
    Column("memory_ids", JSON, nullable=False),
    Column("first_at", UTCDateTime, nullable=True),
    Column("last_at", UTCDateTime, nullable=True),
    Column("embedding", EmbeddingType, nullable=False),
    Column("embedding_model", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ux_syntheses_user_kind_key_part", "user_id", "kind", "key", "part", unique=True),
)
