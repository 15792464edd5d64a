"""SQLite: each user's full-text rows in a rowid range of their own.

A MATCH on 0002's FTS5 tables walks every row holding a term, whoever owns it:
with 1,000 users a common word or trigram matched tens of thousands of rows
before the join kept one user's. FTS5 honours a rowid range inside the index
(it seeks every doclist to the range), so the rows are numbered by user:

    * ``memories_fts_users`` gives each user a ``slot``; a memory's FTS rowid
      (``memories_fts_ids``) is ``slot << 32`` plus its number in the slot, so a
      user's rows are ``rowid BETWEEN slot << 32 AND (slot << 32) + 2**32 - 1``.
    * The triggers allocate that rowid (and re-key the row when its text or
      user changes); a user's slot is released with their last memory, so an
      erased user leaves no trace.
    * Existing rows are renumbered and both FTS5 tables rebuilt. The indexed
      text is unchanged, so FTS5's statistics (and ``bm25()``) are too.

A range rather than an indexed per-user token column: the range costs FTS5 one
seek per term; a token phrase costs a second doclist intersection per query
(7-15 ms at 150,000 rows, against 0.2-2 ms) and lengthens every row for bm25().

PostgreSQL: nothing to do (its channels scan the user's rows through the
``user_id`` index). Downgrade restores 0002's triggers and indexes.

Revision ID: 0005
Revises: 0004
"""

from alembic import context, op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_TABLES = ("memories_fts", "memories_trgm")
_TRIGGERS = ("memories_search_insert", "memories_search_update", "memories_search_delete")
_SLOT = "(slot << 32)"
_LAST = f"{_SLOT} + 4294967295"

# The 'delete' command of a contentless FTS5 table needs the exact old text.
_FTS_DELETE = """
    INSERT INTO {table}({table}, rowid, text)
    SELECT 'delete', rowid, old.text FROM memories_fts_ids WHERE memory_id = old.id;"""
_FTS_INSERT = """
    INSERT INTO {table}(rowid, text)
    SELECT rowid, new.text FROM memories_fts_ids WHERE memory_id = new.id;"""
_FORGET = f"""{"".join(_FTS_DELETE.format(table=t) for t in _TABLES)}
    DELETE FROM memories_fts_ids WHERE memory_id = old.id;
    DELETE FROM memories_fts_users WHERE user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM memories WHERE user_id = old.user_id);"""
_INDEX = f"""
    INSERT OR IGNORE INTO memories_fts_users(user_id) VALUES (new.user_id);
    INSERT INTO memories_fts_ids(rowid, memory_id)
    SELECT coalesce((SELECT max(rowid) FROM memories_fts_ids
                     WHERE rowid BETWEEN {_SLOT} AND {_LAST}), {_SLOT}) + 1, new.id
    FROM memories_fts_users WHERE user_id = new.user_id;{
    "".join(_FTS_INSERT.format(table=t) for t in _TABLES)}"""

_SQLITE_UP = [
    *(f"DROP TRIGGER IF EXISTS {name}" for name in _TRIGGERS),
    """CREATE TABLE IF NOT EXISTS memories_fts_users (
           slot INTEGER PRIMARY KEY, user_id VARCHAR(255) NOT NULL UNIQUE)""",
    "DELETE FROM memories_fts_users",
    "INSERT INTO memories_fts_users(user_id) SELECT DISTINCT user_id FROM memories",
    "DELETE FROM memories_fts_ids",
    f"""INSERT INTO memories_fts_ids(rowid, memory_id)
        SELECT {_SLOT} + row_number() OVER (PARTITION BY m.user_id ORDER BY m.created_at, m.id),
               m.id
        FROM memories m JOIN memories_fts_users u ON u.user_id = m.user_id""",
    *(statement.format(table=t) for t in _TABLES for statement in (
        "INSERT INTO {table}({table}) VALUES ('delete-all')",
        """INSERT INTO {table}(rowid, text) SELECT i.rowid, m.text
           FROM memories_fts_ids i JOIN memories m ON m.id = i.memory_id""",
    )),
    f"""CREATE TRIGGER memories_search_insert AFTER INSERT ON memories BEGIN{_INDEX}
    END""",
    f"""CREATE TRIGGER memories_search_update AFTER UPDATE OF text, user_id ON memories
        WHEN old.text IS NOT new.text OR old.user_id IS NOT new.user_id BEGIN{_FORGET}{_INDEX}
    END""",
    f"""CREATE TRIGGER memories_search_delete AFTER DELETE ON memories BEGIN{_FORGET}
    END""",
]
_SQLITE_DOWN = [
    *(f"DROP TRIGGER IF EXISTS {name}" for name in _TRIGGERS),
    "DROP TABLE IF EXISTS memories_fts_users",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_DOWN:
            op.execute(statement)
        # 0002's own upgrade recreates its triggers and reindexes (rowids may stay large).
        context.script.get_revision("0002").module.upgrade()
