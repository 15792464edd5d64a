"""Long messages are searched and served by their passages.

A message longer than ``recall_turn_tokens`` is cut into passages
(``conversation.passages``) by the job that embeds it; each passage is a row of
``passages`` with its message's id, session, role and date, its place in the message,
its text, token count and vector, deleted with its message (a foreign key on
PostgreSQL; the code that deletes messages deletes their passages first on both). Its
words are indexed as a message's are (``storage.message_search``): a stored generated
``tsvector`` on PostgreSQL, a contentless FTS5 table numbered by user on SQLite
(merged two b-trees at a time, as 0015 set the others).

Messages stored before stay searched whole (by their head) until re-embedded or
imported again: passages are derived data, rebuilt, never migrated.

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage import message_search
from truemem_core.storage.message_search import whole
from truemem_core.storage.schema import EmbeddingType, UTCDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # idempotent, as 0005-0019 are: a store stamped below runs it again over its own layout
    if "passages" not in sa.inspect(op.get_bind()).get_table_names():
        _create()
    message_search.index(whole, "passages")
    if op.get_bind().dialect.name == "sqlite":  # merged as the other indexes are (0015)
        op.execute("INSERT INTO passages_fts(passages_fts, rank) VALUES ('usermerge', 2)")


def _create() -> None:
    op.create_table(
        "passages",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("message_id", _ID, sa.ForeignKey("messages.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("start", sa.Integer, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("embedding", EmbeddingType, nullable=True),
        sa.Column("embedding_model", sa.String(128), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_passages_user_session", "passages", ["user_id", "session_id", "id"])
    op.create_index("ix_passages_message", "passages", ["message_id"])


def downgrade() -> None:
    message_search.drop("passages")
    op.drop_table("passages")
