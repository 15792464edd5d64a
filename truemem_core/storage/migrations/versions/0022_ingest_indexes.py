"""Two indexes that keep the extraction path's reads off a user's whole history.

* ``ix_jobs_user_kind_created`` (``user_id, kind, created_at``): ``record`` queues a
  ``maintain`` job only when none of the user's was queued in the last
  ``maintain_interval_s`` (``conversation.recording``); the check is one probe of
  this index, whatever the number of jobs the user ever had.
* ``ix_memories_superseded_by`` (``superseded_by``): after each stored
  fact, the extraction job asks which memories it superseded (``graph.extraction``,
  ``graph.superseded``) and a fold repoints what its absorbed variants had
  superseded (``memory.write``). With only the user's indexes to go by, each of those
  read every memory row of the user, superseded history and all. A memory id names
  one user's memory, so the column alone is selective; led by ``user_id``, SQLite
  (which keeps no statistics) took it for every read of a user's memories, the
  critical ones' included, instead of the index that orders them.

Building them on an existing store reads ``jobs`` and ``memories`` once and blocks
writes to them meanwhile.

Revision ID: 0022
Revises: 0021
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

INDEXES = {
    "ix_jobs_user_kind_created": ("jobs", ["user_id", "kind", "created_at"]),
    "ix_memories_superseded_by": ("memories", ["superseded_by"]),
}


def upgrade() -> None:
    # idempotent, as 0005-0019 are (a store stamped back runs later upgrades again)
    for name, (table, columns) in INDEXES.items():
        op.create_index(name, table, columns, if_not_exists=True)


def downgrade() -> None:
    for name, (table, _) in INDEXES.items():
        op.drop_index(name, table_name=table, if_exists=True)
