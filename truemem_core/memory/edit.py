"""A user's own changes to a memory: edit, delete (with its text everywhere), feedback.

Each function runs in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import or_
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.errors import InvalidInputError
from truemem_core.graph import erasure as graph_erasure
from truemem_core.graph import superseded as graph_superseded
from truemem_core.memory import items, rows
from truemem_core.memory.lifecycle import FEEDBACK
from truemem_core.memory.write import close_values, reopen_values
from truemem_core.records import Feedback, Memory
from truemem_core.storage.schema import memories, memory_events, utcnow


async def update(
    conn: AsyncConnection, user: str, memory_id: Any, *, text: str | None,
    importance: int | None, vector: Vector | None,
) -> Memory:
    """Change a memory's text (with its new ``vector``) and/or importance."""
    old = await rows.fetch(conn, user, memory_id)
    now = utcnow()
    values: dict[str, Any] = {"updated_at": now}
    events: list[dict[str, Any]] = [{
        "memory_id": old.id, "action": "updated", "reason": "edited",
        "old_text": old.text, "new_text": text or old.text,
        "old_importance": old.importance, "new_importance": importance or old.importance,
    }]
    if text is not None:
        # the message said the old text: it no longer stands for this one in a context,
        # nor this for it (the history keeps where the fact first came from)
        values.update(text=text, embedding=vector, source_message_id=None)
        if old.valid_to is not None and old.superseded_by is None:
            # closed as wrong, now corrected: current again (a superseded fact stays
            # closed, whatever its wording)
            values.update(reopen_values(old, now))
            events.append({"memory_id": old.id, "action": "lifecycle",
                           "reason": "current again: corrected by the user"})
    if importance is not None:
        values["importance"] = importance
    await conn.execute(memories.update().where(memories.c.id == old.id).values(**values))
    await rows.log(conn, user, events)
    return rows.to_memory(await rows.fetch(conn, user, old.id))


async def delete(conn: AsyncConnection, user: str, memory_id: Any) -> None:
    """Delete a memory and its text everywhere; history keeps only that it was deleted."""
    row = await rows.fetch(conn, user, memory_id)
    await forget(conn, user, [row.id], reason="deleted by the user")


async def forget(conn: AsyncConnection, user: str, ids: Sequence[str], *, reason: str) -> None:
    scope = (memory_events.c.user_id == user) & memory_events.c.memory_id.in_(ids)
    await conn.execute(
        memory_events.update().where(scope).values(old_text=None, new_text=None, reason=None))
    # The facts these replaced stay closed, but their history must not quote them.
    await conn.execute(
        memory_events.update()
        .where(memory_events.c.user_id == user, memory_events.c.action == "superseded",
               or_(*(memory_events.c.reason.endswith(f"(by {i})", autoescape=True)
                     for i in ids)))
        .values(reason="superseded by a memory that was since deleted"))
    await conn.execute(
        memories.update()
        .where(memories.c.user_id == user, memories.c.superseded_by.in_(ids))
        .values(superseded_by=None))
    await conn.execute(
        memories.delete().where(memories.c.user_id == user, memories.c.id.in_(ids)))
    await items.forget_memories(conn, user, ids)  # a store item goes with its memory
    await graph_erasure.forget_memories(conn, user, ids)  # and what it gave the graph
    await rows.log(conn, user, [{"memory_id": i, "action": "deleted", "reason": reason}
                                for i in ids])


def check_verdict(verdict: Any) -> Feedback:
    if not isinstance(verdict, str) or verdict not in FEEDBACK:
        raise InvalidInputError(f"verdict must be one of {', '.join(FEEDBACK)}; got {verdict!r}")
    return verdict  # type: ignore[no-any-return]


async def feedback(conn: AsyncConnection, user: str, memory_id: Any, verdict: Feedback) -> Memory:
    """Record the user's verdict; it moves the dynamic score (see ``lifecycle``), and the
    next maintenance pass applies the state that score implies.

    A current fact the user calls wrong is closed at once, as a contradicted one is:
    whatever its importance, it is served no more (not even as critical), the graph
    relations it alone was evidence of end with it, and its history keeps it. Restating
    it (``add_memory`` with its text) reopens it.
    """
    row = await rows.fetch(conn, user, memory_id)
    now = utcnow()
    values: dict[str, Any] = {"feedback": memories.c.feedback + FEEDBACK[verdict],
                              "updated_at": now}
    events = [{"memory_id": row.id, "action": "feedback", "reason": verdict}]
    closing = verdict == "wrong" and row.valid_to is None
    if closing:
        values.update(close_values(now))
        events.append({"memory_id": row.id, "action": "lifecycle",
                       "reason": "closed: the user said it is wrong"})
    await conn.execute(memories.update().where(memories.c.id == row.id).values(**values))
    await rows.log(conn, user, events)
    if closing:
        await graph_superseded.end_with(conn, user, [row.id], now)
    return rows.to_memory(await rows.fetch(conn, user, row.id))
