"""Past messages are searchable by their words, as memories are.

Conversation recall (``search.recall``) ranks a user's past messages with the
memories' channels less the trigram one, so messages get the same full-text
indexing:

PostgreSQL: ``messages.search_vector``, a stored generated ``tsvector`` of the
content (English and Spanish, as ``memories.search_vector``). No GIN index, for
the reason of 0006: the channels scan one user's rows through the
``(user_id, session_id, id)`` index, and a GIN scan would walk every user's
matches.

SQLite: a contentless FTS5 table ``messages_fts`` (porter), numbered by user as
0005 numbers the memories' rows, kept up by triggers. Existing messages are
indexed here. The statements: ``storage.message_search`` (0012 rebuilds the same
index over each message's head).

Revision ID: 0008
Revises: 0007
"""

from truemem_core.storage import message_search
from truemem_core.storage.message_search import whole

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    message_search.index(whole)


def downgrade() -> None:
    message_search.drop()
