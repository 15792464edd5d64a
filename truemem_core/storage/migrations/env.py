"""Alembic environment: runs on the connection TrueMem hands over (see store.py)."""

from alembic import context
from sqlalchemy import text

from truemem_core.storage.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters by table copy
    version_table="truemem_alembic_version",
)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        # Workers starting together must not run the same migration twice.
        connection.execute(text("SELECT pg_advisory_xact_lock(7303105)"))
    context.run_migrations()
