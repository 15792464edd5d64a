"""The SQL that indexes messages' words, for migrations 0008 and 0012.

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


POSTGRES_DROP = ["ALTER TABLE messages DROP COLUMN IF EXISTS search_vector"]


def postgres_column(indexed: Expression) -> list[str]:
    """(Re)create ``messages.search_vector`` over ``indexed(content)``; PostgreSQL
    computes it for every message already stored."""
    text = indexed("content")
    return [
        *POSTGRES_DROP,
        f"""ALTER TABLE messages ADD COLUMN search_vector tsvector
           GENERATED ALWAYS AS (
               to_tsvector('english'::regconfig, {text})
               || to_tsvector('spanish'::regconfig, {text})
           ) STORED""",
    ]


_SLOT = "(slot << 32)"
_LAST = f"{_SLOT} + 4294967295"


def sqlite_index(indexed: Expression) -> list[str]:
    """Index every stored message's ``indexed(content)`` from scratch and keep new ones
    indexed (runs again cleanly over its own layout)."""
    index = f"""
    INSERT OR IGNORE INTO messages_fts_users(user_id) VALUES (new.user_id);
    INSERT INTO messages_fts_ids(rowid, message_id)
    SELECT coalesce((SELECT max(rowid) FROM messages_fts_ids
                     WHERE rowid BETWEEN {_SLOT} AND {_LAST}), {_SLOT}) + 1, new.id
    FROM messages_fts_users WHERE user_id = new.user_id;
    INSERT INTO messages_fts(rowid, text)
    SELECT rowid, {indexed("new.content")} FROM messages_fts_ids WHERE message_id = new.id;"""
    # The 'delete' command of a contentless FTS5 table needs the exact indexed text.
    forget = f"""
    INSERT INTO messages_fts(messages_fts, rowid, text)
    SELECT 'delete', rowid, {indexed("old.content")} FROM messages_fts_ids
    WHERE message_id = old.id;
    DELETE FROM messages_fts_ids WHERE message_id = old.id;
    DELETE FROM messages_fts_users WHERE user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM messages WHERE user_id = old.user_id);"""
    return [
        "DROP TRIGGER IF EXISTS messages_search_insert",
        "DROP TRIGGER IF EXISTS messages_search_delete",
        """CREATE TABLE IF NOT EXISTS messages_fts_users (
               slot INTEGER PRIMARY KEY, user_id VARCHAR(255) NOT NULL UNIQUE)""",
        """CREATE TABLE IF NOT EXISTS messages_fts_ids (
               rowid INTEGER PRIMARY KEY, message_id INTEGER NOT NULL UNIQUE)""",
        """CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
               text, content='', tokenize='porter unicode61 remove_diacritics 2')""",
        "DELETE FROM messages_fts_users",
        "DELETE FROM messages_fts_ids",
        "INSERT INTO messages_fts_users(user_id) SELECT DISTINCT user_id FROM messages",
        f"""INSERT INTO messages_fts_ids(rowid, message_id)
            SELECT {_SLOT} + row_number() OVER (PARTITION BY m.user_id ORDER BY m.id), m.id
            FROM messages m JOIN messages_fts_users u ON u.user_id = m.user_id""",
        "INSERT INTO messages_fts(messages_fts) VALUES ('delete-all')",
        f"""INSERT INTO messages_fts(rowid, text) SELECT i.rowid, {indexed("m.content")}
            FROM messages_fts_ids i JOIN messages m ON m.id = i.message_id""",
        f"CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN{index}\n    END",
        f"CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN{forget}\n    END",
    ]


SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS messages_search_insert",
    "DROP TRIGGER IF EXISTS messages_search_delete",
    "DROP TABLE IF EXISTS messages_fts",
    "DROP TABLE IF EXISTS messages_fts_ids",
    "DROP TABLE IF EXISTS messages_fts_users",
]


def index(indexed: Expression) -> None:
    """In a migration: index every message's ``indexed(content)``, and new ones as they come."""
    _run(postgres_column(indexed), sqlite_index(indexed))


def drop() -> None:
    """In a migration: remove the index of messages' words."""
    _run(POSTGRES_DROP, SQLITE_DROP)


def _run(postgres: list[str], sqlite: list[str]) -> None:
    for statement in postgres if op.get_bind().dialect.name == "postgresql" else sqlite:
        op.execute(statement)
