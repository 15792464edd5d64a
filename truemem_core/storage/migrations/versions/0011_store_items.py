"""Store items: the LangGraph store's documents (``truemem_integrations.langgraph``).

One row per item, keyed by ``(user_id, namespace, key)``: ``namespace`` is the
item's whole namespace, its labels joined with ``.`` (a label holds no ``.``),
``value`` the JSON document, ``memory_id`` the memory whose text indexes it
(NULL for an item stored with ``index=False``). Deleting that memory deletes the
item (``memory.edit.forget``); erasing the user deletes every item.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Idempotent, as 0005-0009 are: a store stamped back to an older revision runs the
    # later upgrades again over tables that are already there.
    if "store_items" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "store_items",
        sa.Column("user_id", sa.String(255), primary_key=True),
        sa.Column("namespace", sa.String(1024), primary_key=True),
        sa.Column("key", sa.String(1024), primary_key=True),
        sa.Column("value", sa.JSON, nullable=False),
        sa.Column("memory_id", sa.String(36), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_store_items_user_memory", "store_items", ["user_id", "memory_id"])


def downgrade() -> None:
    op.drop_index("ix_store_items_user_memory", table_name="store_items")
    op.drop_table("store_items")
