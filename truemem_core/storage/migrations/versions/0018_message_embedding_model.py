"""Each message's vector says which model made it, as each memory's does.

``reembed`` walks every stored vector and skips those already in the new model's
space, so that a run killed midway continues where it stopped; for messages it
needs to know which are done. Messages embedded before this revision have none
(NULL): the next ``reembed`` recomputes them once. Adding a nullable column
rewrites nothing on either backend.

Revision ID: 0018
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0016"
branch_labels = None
depends_on = None


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")


def _has_column() -> bool:  # on SQLite (PostgreSQL says IF [NOT] EXISTS)
    columns = sa.inspect(op.get_bind()).get_columns("messages")
    return any(column["name"] == "embedding_model" for column in columns)


def upgrade() -> None:  # idempotent, as 0005-0016 are
    if _postgres():
        op.execute("ALTER TABLE messages ADD COLUMN IF NOT EXISTS embedding_model VARCHAR(128)")
    elif not _has_column():
        with op.batch_alter_table("messages", recreate="never") as batch:
            batch.add_column(sa.Column("embedding_model", sa.String(128), nullable=True))


def downgrade() -> None:
    if _postgres():
        op.execute("ALTER TABLE messages DROP COLUMN IF EXISTS embedding_model")
    elif _has_column():
        with op.batch_alter_table("messages", recreate="never") as batch:
            batch.drop_column("embedding_model")
