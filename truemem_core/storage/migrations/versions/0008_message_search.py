"""Past messages are searchable by their words, as memories are.

Conversation recall (``search.recall``) ranks a user's past messages with the
memories' channels less the trigram one, so messages get the same full-text
indexing:

PostgreSQL: ``messages.search_vector``, a stored generated ``tsvector`` of the
content (English and Spanish, as ``memories.search_vector``). No GIN index, for
the reason of 0006: the channels scan one user's rows through the
``(user_id, session_id, id)`` index, and a GIN scan would walk every user's
matches.

SQLite: a contentless FTS5 table ``messages_fts`` (porter), numbered by user as
0005 numbers the memories' rows: a user's
``messages_fts_users.slot << 32`` onwards, kept in ``messages_fts_ids``. A
message's content never changes, so triggers index on insert and forget on
delete only; a user's slot goes with their last message. Existing messages are
indexed here.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_POSTGRES_UP = [
    """ALTER TABLE messages ADD COLUMN IF NOT EXISTS search_vector tsvector
       GENERATED ALWAYS AS (
           to_tsvector('english'::regconfig, content)
           || to_tsvector('spanish'::regconfig, content)
       ) STORED""",
]
_POSTGRES_DOWN = ["ALTER TABLE messages DROP COLUMN IF EXISTS search_vector"]

_TABLES = ("messages_fts",)
_SLOT = "(slot << 32)"
_LAST = f"{_SLOT} + 4294967295"

_INDEX = f"""
    INSERT OR IGNORE INTO messages_fts_users(user_id) VALUES (new.user_id);
    INSERT INTO messages_fts_ids(rowid, message_id)
    SELECT coalesce((SELECT max(rowid) FROM messages_fts_ids
                     WHERE rowid BETWEEN {_SLOT} AND {_LAST}), {_SLOT}) + 1, new.id
    FROM messages_fts_users WHERE user_id = new.user_id;{"".join(f'''
    INSERT INTO {table}(rowid, text)
    SELECT rowid, new.content FROM messages_fts_ids WHERE message_id = new.id;'''
    for table in _TABLES)}"""
# The 'delete' command of a contentless FTS5 table needs the exact old text.
_FORGET = f"""{"".join(f'''
    INSERT INTO {table}({table}, rowid, text)
    SELECT 'delete', rowid, old.content FROM messages_fts_ids WHERE message_id = old.id;'''
    for table in _TABLES)}
    DELETE FROM messages_fts_ids WHERE message_id = old.id;
    DELETE FROM messages_fts_users WHERE user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM messages WHERE user_id = old.user_id);"""

_SQLITE_UP = [  # rebuilds from scratch when run again on its own layout
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
    *(statement for table in _TABLES for statement in (
        f"INSERT INTO {table}({table}) VALUES ('delete-all')",
        f"""INSERT INTO {table}(rowid, text) SELECT i.rowid, m.content
            FROM messages_fts_ids i JOIN messages m ON m.id = i.message_id""")),
    f"CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN{_INDEX}\n    END",
    f"CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN{_FORGET}\n    END",
]
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS messages_search_insert",
    "DROP TRIGGER IF EXISTS messages_search_delete",
    *(f"DROP TABLE IF EXISTS {table}" for table in (
        *_TABLES, "messages_fts_ids", "messages_fts_users")),
]


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRES_UP if postgres else _SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _POSTGRES_DOWN if postgres else _SQLITE_DOWN:
        op.execute(statement)
