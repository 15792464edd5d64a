"""The SQL that indexes messages' words, for migrations 0008 and 0012, and passages'
(the parts of long messages, ``conversation.passages``) for 0020, the same way.

0008 indexed a message's whole content; 0012 indexes its first ``INDEXED_CHARS``
characters. Both build their statements here from the expression that is indexed
(``indexed(column)``), so the triggers that index and forget a message always
give SQLite's contentless FTS5 table the same text (its 'delete' needs exactly
the text that was indexed), and a downgrade restores what the revision below made.

PostgreSQL: ``messages.search_vector``, a stored generated ``tsvector``
(English and Spanish, as ``memories.search_vector``). SQLite: a contentless FTS5
table ``messages_fts`` (porter), numbered by user as 0005 numbers the memories'
rows: a user's ``messages_fts_users.slot << 32`` onwards, kept in
``messages_fts_ids``; triggers index on insert and forget on delete (a message's
content never changes); a user's slot goes with their last message.
"""

from __future__ import annotations

from collections.abc import Callable

from alembic import op

INDEXED_CHARS = 10_000
"""Since 0012, a message is searchable by the words of its first 10,000 characters
(about 2,500 tokens). A context serves a past message's first ``recall_turn_tokens``
(150) and finds it by meaning from its first 256 tokens, so words further on found a
message whose served part did not hold them, and indexing a 100,000-character message
whole was most of the database's work in writing it."""

Expression = Callable[[str], str]


def whole(column: str) -> str:
    """0008: the whole content is indexed."""
    return column


def head(column: str) -> str:
    """0012: the first ``INDEXED_CHARS`` characters (``substr`` counts characters on
    both databases)."""
    return f"substr({column}, 1, {INDEXED_CHARS})"


def postgres_drop(table: str = "messages") -> list[str]:
    return [f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector"]


def postgres_column(indexed: Expression, table: str = "messages") -> list[str]:
    """(Re)create ``<table>.search_vector`` over ``indexed(content)``; PostgreSQL
    computes it for every row already stored."""
    text = indexed("content")
    return [
        *postgres_drop(table),
        f"""ALTER TABLE {table} ADD COLUMN search_vector tsvector
           GENERATED ALWAYS AS (
               to_tsvector('english'::regconfig, {text})
               || to_tsvector('spanish'::regconfig, {text})
           ) STORED""",
    ]


_SLOT = "(slot << 32)"
_LAST = f"{_SLOT} + 4294967295"
KEYS = {"messages": "message_id", "passages": "passage_id"}  # the id column of <table>_fts_ids


def sqlite_index(indexed: Expression, table: str = "messages") -> list[str]:
    """Index every stored row's ``indexed(content)`` from scratch and keep new ones
    indexed (runs again cleanly over its own layout)."""
    key = KEYS[table]
    index = f"""
    INSERT OR IGNORE INTO {table}_fts_users(user_id) VALUES (new.user_id);
    INSERT INTO {table}_fts_ids(rowid, {key})
    SELECT coalesce((SELECT max(rowid) FROM {table}_fts_ids
                     WHERE rowid BETWEEN {_SLOT} AND {_LAST}), {_SLOT}) + 1, new.id
    FROM {table}_fts_users WHERE user_id = new.user_id;
    INSERT INTO {table}_fts(rowid, text)
    SELECT rowid, {indexed("new.content")} FROM {table}_fts_ids WHERE {key} = new.id;"""
    # The 'delete' command of a contentless FTS5 table needs the exact indexed text.
    forget = f"""
    INSERT INTO {table}_fts({table}_fts, rowid, text)
    SELECT 'delete', rowid, {indexed("old.content")} FROM {table}_fts_ids
    WHERE {key} = old.id;
    DELETE FROM {table}_fts_ids WHERE {key} = old.id;
    DELETE FROM {table}_fts_users WHERE user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM {table} WHERE user_id = old.user_id);"""
    return [
        f"DROP TRIGGER IF EXISTS {table}_search_insert",
        f"DROP TRIGGER IF EXISTS {table}_search_delete",
        f"""CREATE TABLE IF NOT EXISTS {table}_fts_users (
               slot INTEGER PRIMARY KEY, user_id VARCHAR(255) NOT NULL UNIQUE)""",
        f"""CREATE TABLE IF NOT EXISTS {table}_fts_ids (
               rowid INTEGER PRIMARY KEY, {key} INTEGER NOT NULL UNIQUE)""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {table}_fts USING fts5(
               text, content='', tokenize='porter unicode61 remove_diacritics 2')""",
        f"DELETE FROM {table}_fts_users",
        f"DELETE FROM {table}_fts_ids",
        f"INSERT INTO {table}_fts_users(user_id) SELECT DISTINCT user_id FROM {table}",
        f"""INSERT INTO {table}_fts_ids(rowid, {key})
            SELECT {_SLOT} + row_number() OVER (PARTITION BY m.user_id ORDER BY m.id), m.id
            FROM {table} m JOIN {table}_fts_users u ON u.user_id = m.user_id""",
        f"INSERT INTO {table}_fts({table}_fts) VALUES ('delete-all')",
        f"""INSERT INTO {table}_fts(rowid, text) SELECT i.rowid, {indexed("m.content")}
            FROM {table}_fts_ids i JOIN {table} m ON m.id = i.{key}""",
        f"CREATE TRIGGER {table}_search_insert AFTER INSERT ON {table} BEGIN{index}\n    END",
        f"CREATE TRIGGER {table}_search_delete AFTER DELETE ON {table} BEGIN{forget}\n    END",
    ]


def sqlite_drop(table: str = "messages") -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {table}_search_insert",
            f"DROP TRIGGER IF EXISTS {table}_search_delete",
            *(f"DROP TABLE IF EXISTS {table}_{part}" for part in ("fts", "fts_ids", "fts_users"))]


def index(indexed: Expression, table: str = "messages") -> None:
    """In a migration: index every row's ``indexed(content)``, and new ones as they come."""
    _run(postgres_column(indexed, table), sqlite_index(indexed, table))


def drop(table: str = "messages") -> None:
    """In a migration: remove the index of the rows' words."""
    _run(postgres_drop(table), sqlite_drop(table))


def _run(postgres: list[str], sqlite: list[str]) -> None:
    for statement in postgres if op.get_bind().dialect.name == "postgresql" else sqlite:
        op.execute(statement)
