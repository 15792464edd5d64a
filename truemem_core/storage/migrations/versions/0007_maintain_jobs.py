"""Jobs of kind ``prune`` are now called ``maintain`` (what they always ran).

Pending rows written by an older version keep running under the new name.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE jobs SET kind = 'maintain' WHERE kind = 'prune'")


def downgrade() -> None:
    op.execute("UPDATE jobs SET kind = 'prune' WHERE kind = 'maintain'")
