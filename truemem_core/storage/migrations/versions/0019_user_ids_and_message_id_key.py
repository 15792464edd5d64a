"""User ids stored before ids were checked for look-alikes become the ids now accepted;
the key that makes the message ids the server shows opaque.

Every call now takes a user id in Unicode NFC (``cafe\\u0301`` is ``caf\\u00e9``) and
refuses one with a space at its start or end (``_validation.check_user_id``). A user
stored under another form would be out of reach: each such id is rewritten to its NFC
form without the surrounding space, in every table that holds user ids. Where that
id is already a user, two users must not become one: the other is named with the first
free `` (2)``, `` (3)`` … after it (``"ana "`` beside ``"ana"`` becomes ``"ana (2)"``,
logged), an id every call takes, so its data can be read, exported and erased. A
store's own, well-formed ids are read (one ``DISTINCT`` per table, through its user
index) and left untouched.

The server shows message ids through a permutation keyed with ``message_id_key``, a
random 32 bytes kept in ``truemem_meta`` (``truemem_server.message_ids``): made here
once, so every process serving the store shows the same ids.

The downgrade keeps the rewritten ids (older code accepts them as they are) and the
key (older code does not read it; an upgrade again keeps showing the same ids).

Revision ID: 0019
Revises: 0018
"""

import itertools
import logging
import secrets
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

TABLES = ("memories", "memory_events", "sessions", "messages", "admission_rejections", "jobs",
          "api_keys", "graph_entities", "graph_observations", "graph_relations", "store_items",
          # SQLite: the user's slot in the past messages' full-text index (no UPDATE trigger
          # keeps it in step with ``messages``, which an id never changes in otherwise)
          "messages_fts_users")


KEY = "message_id_key"


def accepted(user: str) -> str:
    """The id a user id stored earlier is now reached by."""
    return unicodedata.normalize("NFC", user).strip()


def upgrade() -> None:
    bind = op.get_bind()
    meta = sa.table("truemem_meta", sa.column("key"), sa.column("value"))
    if bind.execute(sa.select(meta.c.key).where(meta.c.key == KEY)).first() is None:
        bind.execute(sa.insert(meta).values(key=KEY, value=secrets.token_hex(32)))
    present = set(sa.inspect(bind).get_table_names())
    tables = [sa.table(name, sa.column("user_id")) for name in TABLES if name in present]
    users: set[str] = set()
    for table in tables:
        users.update(row[0] for row in bind.execute(
            sa.select(table.c.user_id).where(table.c.user_id.is_not(None)).distinct()))
    for user in sorted(users):
        wanted = accepted(user)
        if wanted == user:
            continue
        if not wanted or wanted in users:  # two users must not become one
            wanted = next(f"{wanted or 'user'} ({n})" for n in itertools.count(2)
                          if f"{wanted or 'user'} ({n})" not in users)
            logging.getLogger("alembic").warning(
                "user id %r is now %r: its own form is already another user", user, wanted)
        users.add(wanted)
        for table in tables:
            bind.execute(sa.update(table).where(table.c.user_id == user).values(user_id=wanted))


def downgrade() -> None:
    pass
