"""Relations end with the memories they came from.

A memory superseded by a newer fact ("Lives in Porto" closes "Lives in Lisbon") is no
longer true, nor is a relation it was the only evidence of. The extraction job replaces
such relations with the new fact's (``graph.extraction``); when the new fact gave none,
or came through a call that writes no graph (``add_memory``, ``add_memories``), they end
here, as a replaced relation ends (``graph.write``): invalidated, with a copy that holds
until ``at``, so that ``as_of`` an earlier instant still sees it current. So do those of
a memory the user called wrong (``memory.edit.feedback``).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.tables import citing, evidence_ids
from truemem_core.storage.schema import graph_relations, memories, utcnow

r = graph_relations


async def end_with_their_memories(
    conn: AsyncConnection, user: str, by: Collection[str], at: datetime
) -> None:
    """End at ``at`` the user's current relations whose evidence memories are all closed,
    one of them by a memory of ``by`` (those just written)."""
    if not by:
        return
    closed = set((await conn.execute(select(memories.c.id).where(
        memories.c.user_id == user, memories.c.superseded_by.in_(sorted(by))))).scalars())
    await end_with(conn, user, closed, at)


async def end_with(conn: AsyncConnection, user: str, just_closed: Collection[str],
                   at: datetime) -> None:
    """End at ``at`` the user's current relations whose evidence memories are all closed,
    one of them among ``just_closed``."""
    closed = set(just_closed)
    if not closed:
        return
    found = await citing(conn, user, closed, r.c.valid_to.is_(None), r.c.invalidated_at.is_(None))
    cited = {row.id: set(evidence_ids(row.evidence_memory_ids)) for row in found}
    if not found:
        return
    valid = set((await conn.execute(select(memories.c.id).where(
        memories.c.user_id == user, memories.c.valid_to.is_(None),
        memories.c.id.in_(sorted(set().union(*(cited[row.id] for row in found)))))
    )).scalars())
    ending = [row for row in found if not cited[row.id] & valid]
    if not ending:
        return
    now = utcnow()
    await conn.execute(update(r).where(r.c.user_id == user, r.c.id.in_(
        [row.id for row in ending])).values(invalidated_at=now))
    await conn.execute(r.insert(), [
        {**row._asdict(), "id": str(uuid.uuid4()), "recorded_at": now, "invalidated_at": None,
         "valid_to": max(at, row.valid_from) if row.valid_from else at} for row in ending])
