"""PostgreSQL: drop the GIN indexes of 0002 (``search_vector`` and trigrams on ``text``).

Search no longer reads them: both lexical channels test the searching user's
rows, reached through the ``user_id`` index, because a GIN scan for a term
walks every user's matches (at 1.5 M rows a keyword search took up to 124 ms
that way, against 10 ms for the user's own rows). Unused, the indexes only cost
each write of a memory's text a few dozen index entries, and disk. The
``search_vector`` column and ``pg_trgm`` stay: the channels need them.
Downgrade rebuilds both indexes.

SQLite: nothing to do.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_memories_search_vector": "gin (search_vector)",
    "ix_memories_text_trgm": "gin (text gin_trgm_ops)",
}


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name in _INDEXES:
            op.execute(f"DROP INDEX IF EXISTS {name}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, method in _INDEXES.items():
            op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON memories USING {method}")
