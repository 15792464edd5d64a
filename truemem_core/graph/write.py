"""The graph's write path: ``apply_facts`` (extraction and the add_* calls) and retractions.

The caller owns the transaction (and holds the user's lock).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.records import GraphFacts


async def apply_facts(
    conn: AsyncConnection, user: str, facts: GraphFacts, *, source_memory_id: str | None,
    source_message_id: int | None, now: datetime,
) -> None:
    """Write ``facts`` for ``user``: entities found by handle or created, observations and
    relations opened unless the same fact is already current (idempotent); a relation's
    ``replaces`` closes the relation it replaces."""
    raise NotImplementedError
