"""SQLite: the full-text indexes merge any two b-trees of a level when asked.

FTS5 merges an index's b-trees (one per writing transaction) four of a level at a
time by default; the worker's merge steps (``storage.text_indexes``) pass that on to
FTS5's ``usermerge`` option, set here to 2, its least: a step merges whatever two
b-trees share a level, so an index settles at one to three of them, and a search
looks each of its terms up in those instead of in the dozen or more a store written
to message by message holds. An option of each FTS5 table, stored in its
``_config`` table.

PostgreSQL: nothing to do (no FTS5). The downgrade restores FTS5's default, 4.

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

TABLES = ("memories_fts", "memories_trgm", "messages_fts")  # 0002, 0005, 0008, 0012


def _usermerge(value: int) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:  # idempotent, as 0005-0014 are
        op.execute(f"INSERT INTO {table}({table}, rank) VALUES ('usermerge', {value})")


def upgrade() -> None:
    _usermerge(2)


def downgrade() -> None:
    _usermerge(4)
