"""An index on a user's memories by state and importance.

Reads on a chat's path pick a user's memories by state: the lexical channels'
statistics (how many current memories the user has, ``search.channels.sqlite``),
the critical memories (importance 5, not archived, ``memory.reads``), the
candidates of each channel. With only ``(user_id, created_at)`` to go by, SQLite
read every row of the user's, embedding and all, to test its state, several times
per ``get_context``. ``(user_id, state, importance)`` answers the count from the
index alone and finds the critical memories without reading the others.

Building it on an existing store reads ``memories`` once and blocks writes to it
meanwhile.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

NAME = "ix_memories_user_state_importance"


def upgrade() -> None:
    # idempotent, as 0005-0013 are (a store stamped back runs later upgrades again)
    op.create_index(NAME, "memories", ["user_id", "state", "importance"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index(NAME, table_name="memories", if_exists=True)
