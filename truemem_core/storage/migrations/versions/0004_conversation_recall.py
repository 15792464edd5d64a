"""Conversation recall: messages carry an embedding (filled in the background).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import EmbeddingType

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages", recreate="never") as batch:
        batch.add_column(sa.Column("embedding", EmbeddingType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages", recreate="never") as batch:
        batch.drop_column("embedding")
