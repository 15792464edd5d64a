"""Past messages are searchable by the words of their first 10,000 characters.

0008 indexed the whole of every message; a message can be 100,000 characters
(``max_message_chars``), and indexing one cost the database about 20 ms as it was
written. A context serves a past message's head and finds it by meaning from its
head, so the index now holds the first ``message_search.INDEXED_CHARS`` characters
(why: ``storage.message_search``).

PostgreSQL recomputes ``messages.search_vector`` for every stored message; SQLite
re-indexes them and replaces the triggers. The downgrade restores 0008's index of
the whole content.

Revision ID: 0012
Revises: 0011
"""

from truemem_core.storage import message_search
from truemem_core.storage.message_search import head, whole

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    message_search.index(head)


def downgrade() -> None:
    message_search.index(whole)
