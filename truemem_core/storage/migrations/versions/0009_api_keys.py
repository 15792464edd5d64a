"""API keys of the HTTP service (``truemem_server``): one row per key, hashes only.

``id`` is the public key id (the part of the key after ``tm_`` and before the
secret), ``secret_hash`` the SHA-256 of the whole key: the key itself is never
stored. ``tenant`` is the namespace every user id of the key lives in;
``user_id`` (in the tenant, without its prefix) limits the key to one end user;
``read_only`` forbids writes; ``revoked_at`` ends the key without losing the row.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Idempotent, as 0005-0008 are: a store stamped back to an older revision runs the
    # later upgrades again over tables that are already there.
    if "api_keys" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(63), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("read_only", sa.Boolean, nullable=False),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("revoked_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_api_keys_tenant_created", "api_keys", ["tenant", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_api_keys_tenant_created", table_name="api_keys")
    op.drop_table("api_keys")
