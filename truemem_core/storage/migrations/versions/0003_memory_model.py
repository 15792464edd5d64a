"""The richer memory model: usage, feedback, validity, dynamic score, admission rejections.

memories
    * ``retrievals`` / ``last_accessed_at``: how often and when a memory was
      last put in an answer (adaptive importance, reactivation).
    * ``feedback``: running total of user feedback (+1 helpful, -2 wrong).
    * ``dynamic_score``: the last computed adaptive score; NULL until scored.
    * ``valid_from`` / ``valid_to``: when the fact held in the world (NULL
      ``valid_from`` means since ``created_at``; NULL ``valid_to``: still holds).
    * ``invalidated_at`` / ``superseded_by``: when the system learned that the
      fact no longer holds, and the memory that replaced it.

admission_rejections
    Candidate memories that admission control turned away, with their score
    and factors, so a rejection can be explained. User data: erased with the
    user.

Every new column is nullable or has a server default, so code that does not
know them yet keeps inserting rows. On SQLite the columns are added in place
(``recreate="never"``): rebuilding ``memories`` would drop the full-text
triggers of 0002.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import MessageId, UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _columns() -> list[sa.Column[object]]:
    # nullable or with a server default: rows inserted by older code stay valid
    return [
        sa.Column("retrievals", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_accessed_at", UTCDateTime, nullable=True),
        sa.Column("feedback", sa.Integer, nullable=False, server_default="0"),
        sa.Column("dynamic_score", sa.Float, nullable=True),
        sa.Column("valid_from", UTCDateTime, nullable=True),
        sa.Column("valid_to", UTCDateTime, nullable=True),
        sa.Column("invalidated_at", UTCDateTime, nullable=True),
        sa.Column("superseded_by", sa.String(36), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("memories", recreate="never") as batch:
        for column in _columns():
            batch.add_column(column)
    op.create_table(
        "admission_rejections",
        sa.Column("id", MessageId, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("factors", sa.JSON, nullable=False),
        sa.Column("source_message_id", MessageId, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    op.create_index(
        "ix_admission_rejections_user_created", "admission_rejections", ["user_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_admission_rejections_user_created", table_name="admission_rejections")
    op.drop_table("admission_rejections")
    # SQLite >= 3.35 drops a column in place, keeping 0002's triggers.
    with op.batch_alter_table("memories", recreate="never") as batch:
        for column in reversed(_columns()):
            batch.drop_column(column.name)
