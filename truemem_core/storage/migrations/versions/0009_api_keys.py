"""Once the API keys table of the HTTP service; now nothing: the table is the server's.

The server (``truemem_server/key_table.py``) makes and migrates its ``api_keys``
table itself. Stores that ran this revision before it moved keep the table this
revision made, keys and all: it has the shape the server's own, and the server
takes it over as it is. Nothing here creates it any more, and going back below
this revision no longer drops it (the core's history must not delete the
server's keys).

Revision ID: 0009
Revises: 0008
"""

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
