"""Initial schema: memories, their history, sessions, messages, jobs.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import EmbeddingType, MessageId, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = sa.String(36)
USER = sa.String(255)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "truemem_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "memories",
        sa.Column("id", ID, primary_key=True),
        sa.Column("user_id", USER, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("importance", sa.SmallInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reinforcements", sa.Integer, nullable=False),
        sa.Column("embedding", EmbeddingType, nullable=False),
        sa.Column("embedding_model", sa.String(128), nullable=False),
        sa.Column("source_message_id", MessageId, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_memories_user_created", "memories", ["user_id", "created_at"])
    op.create_table(
        "memory_events",
        sa.Column("id", MessageId, primary_key=True, autoincrement=True),
        sa.Column("memory_id", ID, nullable=False),
        sa.Column("user_id", USER, nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("old_text", sa.Text, nullable=True),
        sa.Column("new_text", sa.Text, nullable=True),
        sa.Column("old_importance", sa.SmallInteger, nullable=True),
        sa.Column("new_importance", sa.SmallInteger, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_memory_events_user_memory", "memory_events", ["user_id", "memory_id"])
    op.create_table(
        "sessions",
        sa.Column("user_id", USER, primary_key=True),
        sa.Column("session_id", USER, primary_key=True),
        sa.Column("summary", sa.Text, nullable=True),
        sa.Column("summarized_through", MessageId, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_table(
        "messages",
        sa.Column("id", MessageId, primary_key=True, autoincrement=True),
        sa.Column("user_id", USER, nullable=False),
        sa.Column("session_id", USER, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("summarized", sa.Boolean, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_messages_user_session", "messages", ["user_id", "session_id", "id"])
    op.create_table(
        "jobs",
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("user_id", USER, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_jobs_status_created", "jobs", ["status", "created_at"])


def downgrade() -> None:
    for table in ("jobs", "messages", "sessions", "memory_events", "memories", "truemem_meta"):
        op.drop_table(table)
