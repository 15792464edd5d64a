"""Hybrid search: full-text and trigram indexes over memories.

PostgreSQL
    * ``pg_trgm`` and a GIN trigram index on ``memories.text`` (fuzzy channel).
    * ``memories.search_vector``: a stored generated ``tsvector`` of the text
      parsed twice, ``to_tsvector('english', text) || to_tsvector('spanish', text)``,
      with a GIN index (keyword channel). One column serves both languages
      without knowing a memory's language: an English query term matches the
      English stems, a Spanish one the Spanish stems. The query side removes
      stop-words of both languages itself (``textsearch.py``), since each
      configuration keeps the other language's stop-words.

SQLite
    * Two contentless FTS5 tables, ``memories_fts`` (``porter unicode61``
      tokenizer, diacritics removed) and ``memories_trgm`` (``trigram``
      tokenizer); they index the text without storing a second copy of it.
    * ``memories_fts_ids`` gives each memory a stable integer FTS rowid
      (``memories`` has a text primary key, whose implicit rowid VACUUM may
      renumber).
    * Triggers on ``memories`` insert, update of ``text`` and delete keep the
      three in step in the same transaction, whoever writes the row.

A later migration that rebuilds ``memories`` on SQLite (batch mode copies the
table) drops these triggers and must create them again.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_POSTGRES_UP = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """ALTER TABLE memories ADD COLUMN IF NOT EXISTS search_vector tsvector
       GENERATED ALWAYS AS (
           to_tsvector('english'::regconfig, text) || to_tsvector('spanish'::regconfig, text)
       ) STORED""",
    "CREATE INDEX IF NOT EXISTS ix_memories_search_vector ON memories USING gin (search_vector)",
    "CREATE INDEX IF NOT EXISTS ix_memories_text_trgm ON memories USING gin (text gin_trgm_ops)",
]
_POSTGRES_DOWN = [
    "DROP INDEX IF EXISTS ix_memories_text_trgm",
    "DROP INDEX IF EXISTS ix_memories_search_vector",
    "ALTER TABLE memories DROP COLUMN IF EXISTS search_vector",
]

# The 'delete' command of a contentless FTS5 table needs the exact old text.
_FTS_DELETE = """
    INSERT INTO {table}({table}, rowid, text)
    SELECT 'delete', rowid, old.text FROM memories_fts_ids WHERE memory_id = old.id;"""
_FTS_INSERT = """
    INSERT INTO {table}(rowid, text)
    SELECT rowid, new.text FROM memories_fts_ids WHERE memory_id = new.id;"""
_TABLES = ("memories_fts", "memories_trgm")


def _each(template: str) -> str:
    return "".join(template.format(table=t) for t in _TABLES)


_SQLITE_UP = [
    """CREATE TABLE IF NOT EXISTS memories_fts_ids (
           rowid INTEGER PRIMARY KEY, memory_id VARCHAR(36) NOT NULL UNIQUE)""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
           text, content='', tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS memories_trgm USING fts5(
           text, content='', tokenize='trigram')""",
    f"""CREATE TRIGGER IF NOT EXISTS memories_search_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts_ids(memory_id) VALUES (new.id);{_each(_FTS_INSERT)}
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS memories_search_update
        AFTER UPDATE OF text ON memories WHEN old.text IS NOT new.text BEGIN
        {_each(_FTS_DELETE)}{_each(_FTS_INSERT)}
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS memories_search_delete AFTER DELETE ON memories BEGIN
        {_each(_FTS_DELETE)}
        DELETE FROM memories_fts_ids WHERE memory_id = old.id;
    END""",
    # Backfill the memories stored before this revision.
    """INSERT INTO memories_fts_ids(memory_id)
       SELECT id FROM memories WHERE id NOT IN (SELECT memory_id FROM memories_fts_ids)""",
    # (re)index everything: 'delete-all' empties a contentless table
    "INSERT INTO memories_fts(memories_fts) VALUES ('delete-all')",
    """INSERT INTO memories_fts(rowid, text)
       SELECT i.rowid, m.text FROM memories_fts_ids i JOIN memories m ON m.id = i.memory_id""",
    "INSERT INTO memories_trgm(memories_trgm) VALUES ('delete-all')",
    """INSERT INTO memories_trgm(rowid, text)
       SELECT i.rowid, m.text FROM memories_fts_ids i JOIN memories m ON m.id = i.memory_id""",
]
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memories_search_insert",
    "DROP TRIGGER IF EXISTS memories_search_update",
    "DROP TRIGGER IF EXISTS memories_search_delete",
    "DROP TABLE IF EXISTS memories_trgm",
    "DROP TABLE IF EXISTS memories_fts",
    "DROP TABLE IF EXISTS memories_fts_ids",
]


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRES_UP if postgres else _SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRES_DOWN if postgres else _SQLITE_DOWN:
        op.execute(statement)
