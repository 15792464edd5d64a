"""PostgreSQL: drop the GIN trigram index on ``memories.text``.

Search stopped using it when the trigram channel began scoring the user's rows
through the ``user_id`` index (a ``<%`` test let the planner AND the GIN index
in, and its scan walked every user's matches). Unused, it only cost every write
of a memory's text a few dozen trigram entries, and disk. ``pg_trgm`` stays: the
channel's ``word_similarity`` needs it. Downgrade rebuilds the index.

SQLite: nothing to do.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_memories_text_trgm")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX IF NOT EXISTS ix_memories_text_trgm "
                   "ON memories USING gin (text gin_trgm_ops)")
