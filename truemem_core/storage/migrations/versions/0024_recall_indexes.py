"""Indexes that keep conversation recall's search by meaning off a user's whole history.

* PostgreSQL: an HNSW index (pgvector) on the vectors of ``messages`` and of
  ``passages``, ``ix_<table>_embedding_hnsw``. pgvector indexes vectors of one fixed
  dimension and the columns are ``vector`` of any, so each is on the expression
  ``embedding::vector(D)``, D the dimension of the store's embedder
  (``storage.vector_indexes``, which the search orders by; built with its ``BUILD``
  parameters). A store that recorded its
  embedder gets them here; a store that did not yet (a new one: the migration runs
  before the first TrueMem with an embedder records it) gets them when it does, and a
  re-embedding makes them again for its model. Building them reads every vector of
  the two tables and blocks writes to them meanwhile: on a large store, some minutes
  (``maintenance_work_mem`` of a few hundred MB keeps the build in memory).
* SQLite: ``ix_<table>_user_embedded`` (``user_id, id``) over the rows with a vector,
  what the in-memory copy of a user's vectors is checked against on every search
  (``search.channels.sqlite_vectors``), read without touching the rows; and
  ``ix_passages_user_message`` (``user_id, message_id``), which messages of a user's
  are searched by their passages, read the same way: a context's keyword statistics
  are the user's messages' less those and the recent window's
  (``Corpus.left_out``), instead of a test of every past message.

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

TABLES = ("messages", "passages")
PASSAGES_BY_USER = "ix_passages_user_message"


def _dimension() -> int | None:
    value = op.get_bind().execute(sa.text(
        "SELECT value FROM truemem_meta WHERE key = 'embedding_dimension'")).scalar()
    return int(value) if value else None


def upgrade() -> None:  # idempotent, as 0005-0023 are
    if op.get_bind().dialect.name == "postgresql":
        dimension = _dimension()
        if dimension is not None:
            for table in TABLES:
                op.execute(f"CREATE INDEX IF NOT EXISTS ix_{table}_embedding_hnsw ON {table} "
                           f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
                           "WITH (m = 32, ef_construction = 128)")
        return
    for table in TABLES:
        op.create_index(f"ix_{table}_user_embedded", table, ["user_id", "id"],
                        sqlite_where=sa.text("embedding IS NOT NULL"), if_not_exists=True)
    op.create_index(PASSAGES_BY_USER, "passages", ["user_id", "message_id"],
                    if_not_exists=True)


def downgrade() -> None:
    for table in TABLES:
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP INDEX IF EXISTS ix_{table}_embedding_hnsw")
        else:
            op.drop_index(f"ix_{table}_user_embedded", table_name=table, if_exists=True)
    op.drop_index(PASSAGES_BY_USER, table_name="passages", if_exists=True)
