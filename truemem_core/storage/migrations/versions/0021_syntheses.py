"""Syntheses: summaries of a user's related messages and memories, with their sources.

One row per (user, kind, key): ``kind`` says what is summarised ("session": one past
session, ``key`` its id), ``text`` the summary, ``message_ids`` and ``memory_ids``
the sources whose content made it into the text (JSON arrays), ``first_at`` and
``last_at`` when the first and last of them were said. Searchable as memories and
messages are: by meaning (``embedding``, named by ``embedding_model``) and by words:

PostgreSQL: ``search_vector``, a stored generated ``tsvector`` (English and Spanish,
as ``memories.search_vector``), no GIN index (0006's reason).

SQLite: a contentless FTS5 table ``syntheses_fts`` (porter), numbered by user as 0008
numbers the messages' rows (a user's ``syntheses_fts_users.slot << 32`` onwards,
kept in ``syntheses_fts_ids``); triggers index on insert, forget on delete, and do
both when a refresh rewrites the text; merged by the worker as the other indexes
are (``usermerge`` 2, as 0015 sets theirs).

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import EmbeddingType, UTCDateTime

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_SLOT = "(slot << 32)"
_LAST = f"{_SLOT} + 4294967295"

_INDEX = f"""
    INSERT OR IGNORE INTO syntheses_fts_users(user_id) VALUES (new.user_id);
    INSERT INTO syntheses_fts_ids(rowid, synthesis_id)
    SELECT coalesce((SELECT max(rowid) FROM syntheses_fts_ids
                     WHERE rowid BETWEEN {_SLOT} AND {_LAST}), {_SLOT}) + 1, new.id
    FROM syntheses_fts_users WHERE user_id = new.user_id;
    INSERT INTO syntheses_fts(rowid, text)
    SELECT rowid, new.text FROM syntheses_fts_ids WHERE synthesis_id = new.id;"""
# The 'delete' command of a contentless FTS5 table needs the exact indexed text.
_FORGET = """
    INSERT INTO syntheses_fts(syntheses_fts, rowid, text)
    SELECT 'delete', rowid, old.text FROM syntheses_fts_ids WHERE synthesis_id = old.id;
    DELETE FROM syntheses_fts_ids WHERE synthesis_id = old.id;"""
_LAST_GONE = """
    DELETE FROM syntheses_fts_users WHERE user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM syntheses WHERE user_id = old.user_id);"""

SQLITE = [
    """CREATE TABLE syntheses_fts_users (
           slot INTEGER PRIMARY KEY, user_id VARCHAR(255) NOT NULL UNIQUE)""",
    """CREATE TABLE syntheses_fts_ids (
           rowid INTEGER PRIMARY KEY, synthesis_id VARCHAR(36) NOT NULL UNIQUE)""",
    """CREATE VIRTUAL TABLE syntheses_fts USING fts5(
           text, content='', tokenize='porter unicode61 remove_diacritics 2')""",
    # merged as the others are (0015, ``storage.text_indexes``): a refresh rewrites it
    "INSERT INTO syntheses_fts(syntheses_fts, rank) VALUES ('usermerge', 2)",
    f"CREATE TRIGGER syntheses_search_insert AFTER INSERT ON syntheses BEGIN{_INDEX}\n    END",
    f"CREATE TRIGGER syntheses_search_delete AFTER DELETE ON syntheses BEGIN{_FORGET}"
    f"{_LAST_GONE}\n    END",
    f"""CREATE TRIGGER syntheses_search_update AFTER UPDATE OF text ON syntheses
        BEGIN{_FORGET}{_INDEX}\n    END""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS syntheses_search_insert",
    "DROP TRIGGER IF EXISTS syntheses_search_delete",
    "DROP TRIGGER IF EXISTS syntheses_search_update",
    "DROP TABLE IF EXISTS syntheses_fts",
    "DROP TABLE IF EXISTS syntheses_fts_ids",
    "DROP TABLE IF EXISTS syntheses_fts_users",
]
POSTGRES = [
    """ALTER TABLE syntheses ADD COLUMN search_vector tsvector
       GENERATED ALWAYS AS (
           to_tsvector('english'::regconfig, text)
           || to_tsvector('spanish'::regconfig, text)
       ) STORED""",
]


def upgrade() -> None:
    if "syntheses" in sa.inspect(op.get_bind()).get_table_names():
        return  # idempotent, as 0011 is
    op.create_table(
        "syntheses",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("message_ids", sa.JSON, nullable=False),
        sa.Column("memory_ids", sa.JSON, nullable=False),
        sa.Column("first_at", UTCDateTime, nullable=True),
        sa.Column("last_at", UTCDateTime, nullable=True),
        sa.Column("embedding", EmbeddingType, nullable=False),
        sa.Column("embedding_model", sa.String(128), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ux_syntheses_user_kind_key", "syntheses", ["user_id", "kind", "key"],
                    unique=True)
    for statement in POSTGRES if op.get_bind().dialect.name == "postgresql" else SQLITE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_DROP:
            op.execute(statement)
    op.drop_index("ux_syntheses_user_kind_key", table_name="syntheses")
    op.drop_table("syntheses")
