"""PostgreSQL: each memory carries a signature of its text's trigrams.

``memories.trigram_signature`` is a stored generated ``bit(1024)``: bit ``h(t)`` is
set for every trigram ``t`` of the text, as pg_trgm's ``show_trgm`` makes them
(``h``: the first 12 bits of ``md5(t)``, modulo 1024). The trigram channel scores
every memory of the user against every query term with ``word_similarity``, which
builds and sorts the text's trigrams on each call: on a chat's path it was most of
the database's work. The signature tells in one AND and a bit count that a memory
cannot reach the threshold for a term, and ``word_similarity`` runs only for the
rest (why that never drops a match: ``search.channels.postgres``).

Adding the column computes it for every stored memory: a table rewrite, holding
an exclusive lock on ``memories`` (1.6 s for 30,000 memories on a 2-core VM).
SQLite: nothing to do (its trigram channel starts from an FTS5 trigram index).
The downgrade drops the column and its function.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

BITS = 1024

# A SQL-standard body (BEGIN ATOMIC, PostgreSQL 14+) is bound when it is created:
# show_trgm is found whatever the search_path of a later session or a restore.
_FUNCTION = f"""
CREATE FUNCTION truemem_trigram_signature(value text) RETURNS bit({BITS})
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(
        bit_or(set_bit(B'0'::bit({BITS}),
                       ('x' || left(md5(trigram), 3))::bit(12)::integer % {BITS}, 1)),
        B'0'::bit({BITS}))
    FROM unnest(show_trgm(value)) AS trigram;
END"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    # idempotent, as 0005-0012 are (a store stamped back runs later upgrades again)
    if bind.execute(sa.text(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = 'memories' AND column_name = 'trigram_signature'")).first():
        return
    op.execute("DROP FUNCTION IF EXISTS truemem_trigram_signature(text)")
    op.execute(_FUNCTION)
    op.execute(f"""ALTER TABLE memories ADD COLUMN trigram_signature bit({BITS})
                   GENERATED ALWAYS AS (truemem_trigram_signature(text)) STORED""")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE memories DROP COLUMN IF EXISTS trigram_signature")
    op.execute("DROP FUNCTION IF EXISTS truemem_trigram_signature(text)")
