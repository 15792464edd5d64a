"""The knowledge graph: entities, bi-temporal observations and relations, per user.

``graph_entities``: a typed name per user (``norm`` is the normalised name,
``alias_keys`` the normalised aliases as ``|a|b|`` for one LIKE), unique by
``(user_id, norm, type)`` among the current rows (a partial unique index, on
both backends), ``invalidated_at`` set when the entity is retracted.
``graph_observations`` and ``graph_relations``: never updated in place;
``valid_from`` / ``valid_to`` say when a fact held in the world,
``recorded_at`` / ``invalidated_at`` when the system believed it. Relation
evidence ids are JSON lists. Every index starts with ``user_id``: reads scan
one user's rows (no trigram index on names, for the reason of 0006).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

from truemem_core.storage.schema import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_ID = sa.String(36)
_USER = sa.String(255)
_MESSAGE = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_CURRENT = sa.text("invalidated_at IS NULL")


def _entities() -> None:
    op.create_table(
        "graph_entities",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("user_id", _USER, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("norm", sa.String(255), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("aliases", sa.JSON, nullable=False),
        sa.Column("alias_keys", sa.Text, nullable=False),
        sa.Column("source_memory_id", _ID, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("invalidated_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_graph_entities_user_norm", "graph_entities", ["user_id", "norm"])
    op.create_index("ux_graph_entities_current", "graph_entities", ["user_id", "norm", "type"],
                    unique=True, sqlite_where=_CURRENT, postgresql_where=_CURRENT)


def _times() -> list[sa.Column[object]]:
    return [
        sa.Column("valid_from", UTCDateTime, nullable=True),
        sa.Column("valid_to", UTCDateTime, nullable=True),
        sa.Column("recorded_at", UTCDateTime, nullable=False),
        sa.Column("invalidated_at", UTCDateTime, nullable=True),
    ]


def _observations() -> None:
    op.create_table(
        "graph_observations",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("user_id", _USER, nullable=False),
        sa.Column("entity_id", _ID, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("source_memory_id", _ID, nullable=True),
        sa.Column("source_message_id", _MESSAGE, nullable=True),
        *_times(),
    )
    op.create_index("ix_graph_observations_user_entity", "graph_observations",
                    ["user_id", "entity_id"])


def _relations() -> None:
    op.create_table(
        "graph_relations",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("user_id", _USER, nullable=False),
        sa.Column("source_id", _ID, nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("target_id", _ID, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("evidence", sa.Text, nullable=True),
        sa.Column("evidence_memory_ids", sa.JSON, nullable=False),
        sa.Column("evidence_message_ids", sa.JSON, nullable=False),
        *_times(),
    )
    op.create_index("ix_graph_relations_user_source", "graph_relations", ["user_id", "source_id"])
    op.create_index("ix_graph_relations_user_target", "graph_relations", ["user_id", "target_id"])


_TABLES = {"graph_entities": _entities, "graph_observations": _observations,
           "graph_relations": _relations}


def upgrade() -> None:
    # Idempotent, as 0005-0009 are: a store stamped back to an older revision runs the
    # later upgrades again over tables that are already there.
    present = set(sa.inspect(op.get_bind()).get_table_names())
    for name, create in _TABLES.items():
        if name not in present:
            create()


def downgrade() -> None:
    for name in reversed(_TABLES):
        op.drop_table(name)  # its indexes go with it
