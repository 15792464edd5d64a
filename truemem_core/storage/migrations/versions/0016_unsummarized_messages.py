"""An index on a user's messages by session, whether summarised, id and tokens.

``record`` weighs a session's messages not yet folded into its summary (the tokens
that decide whether to queue a summary, ``conversation.recording``), and the summary
job reads them (``conversation.sessions.to_fold``). With only ``(user_id,
session_id, id)`` to go by, both read every message of the session to test its
flag: with sessions of 2,500 messages (``benchmarks/context_latency.py --messages
2500``) ``record`` took 18 ms on PostgreSQL and 10 ms on SQLite, against under 3
with short sessions. ``(user_id, session_id, summarized, id, tokens)`` finds the
unsummarised tail alone, however long the session. On SQLite it also answers
conversation recall's statistics (how many past messages the user has, and their
mean length in tokens) from the index alone, instead of from every message row,
embedding and all.

Building it on an existing store reads ``messages`` once and blocks writes to it
meanwhile.

Revision ID: 0016
Revises: 0015
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

NAME = "ix_messages_user_session_summarized"


def upgrade() -> None:
    # idempotent, as 0005-0015 are (a store stamped back runs later upgrades again)
    op.create_index(NAME, "messages", ["user_id", "session_id", "summarized", "id", "tokens"],
                    if_not_exists=True)


def downgrade() -> None:
    op.drop_index(NAME, table_name="messages", if_exists=True)
