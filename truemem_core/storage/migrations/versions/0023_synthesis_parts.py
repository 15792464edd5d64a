"""A session's syntheses by parts: one per stretch of ``PART_MESSAGES`` user messages.

A long session (a day of a lifetime's history runs to hundreds of messages) has too
much in it for one synthesis of a few lines: a question about one of its topics found
a synthesis of the whole session's five most informative sentences, seldom about it.
``part`` numbers the stretches of a session (0: its first ``PART_MESSAGES`` user
messages), and the unique index becomes (user, kind, key, part). Existing rows are
part 0 of their session, which its next synthesis job rebuilds by parts.

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

OLD, NEW = "ux_syntheses_user_kind_key", "ux_syntheses_user_kind_key_part"


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")


def _has_part() -> bool:  # on SQLite (PostgreSQL says IF [NOT] EXISTS)
    columns = sa.inspect(op.get_bind()).get_columns("syntheses")
    return any(column["name"] == "part" for column in columns)


def upgrade() -> None:  # idempotent, as 0005-0022 are
    if _postgres():
        op.execute("ALTER TABLE syntheses ADD COLUMN IF NOT EXISTS part INTEGER NOT NULL "
                   "DEFAULT 0")
    elif not _has_part():
        with op.batch_alter_table("syntheses", recreate="never") as batch:
            batch.add_column(sa.Column("part", sa.Integer(), nullable=False,
                                       server_default="0"))
    op.drop_index(OLD, table_name="syntheses", if_exists=True)
    op.create_index(NEW, "syntheses", ["user_id", "kind", "key", "part"], unique=True,
                    if_not_exists=True)


def downgrade() -> None:
    # the parts after a session's first go: 0021's index allows one row per session
    op.execute("DELETE FROM syntheses WHERE part > 0")
    op.drop_index(NEW, table_name="syntheses", if_exists=True)
    op.create_index(OLD, "syntheses", ["user_id", "kind", "key"], unique=True,
                    if_not_exists=True)
    if _postgres():
        op.execute("ALTER TABLE syntheses DROP COLUMN IF EXISTS part")
    elif _has_part():
        with op.batch_alter_table("syntheses", recreate="never") as batch:
            batch.drop_column("part")
