"""Memory rows: reading one, turning rows into records, writing history events."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import is_storable
from truemem_core.errors import InvalidInputError, NotFoundError
from truemem_core.records import Memory, MemoryEvent
from truemem_core.storage.schema import memories, memory_events, utcnow

MEMORY_COLUMNS = [c for c in memories.c if c.name != "embedding"]  # vectors stay in the database


def to_memory(row: Any) -> Memory:
    """A row (or anything with its attributes, as ``bulk``'s rows) as a ``Memory``."""
    return Memory(
        id=row.id,
        user_id=row.user_id,
        text=row.text,
        importance=row.importance,
        kind=row.kind,
        source=row.source,
        state=row.state,
        reinforcements=row.reinforcements,
        created_at=row.created_at,
        updated_at=row.updated_at,
        source_message_id=row.source_message_id,
        valid_to=row.valid_to,
        superseded_by=row.superseded_by,
        valid_from=row.valid_from or row.created_at,
    )


def to_event(row: Row[Any]) -> MemoryEvent:
    return MemoryEvent(
        memory_id=row.memory_id,
        action=row.action,
        created_at=row.created_at,
        reason=row.reason,
        old_text=row.old_text,
        new_text=row.new_text,
        old_importance=row.old_importance,
        new_importance=row.new_importance,
    )


def check_memory_id(memory_id: Any) -> str:
    if not isinstance(memory_id, str):
        raise InvalidInputError(f"memory_id must be a str, got {type(memory_id).__name__}")
    if not is_storable(memory_id):  # no such id can exist; the driver could not even send it
        raise InvalidInputError("memory_id has a NUL or an unpaired surrogate")
    return memory_id


async def fetch(conn: AsyncConnection, user_id: str, memory_id: Any) -> Row[Any]:
    """The user's memory row; another user's id is ``NotFoundError`` like an unknown one."""
    row = (await conn.execute(
        select(*MEMORY_COLUMNS).where(
            memories.c.id == check_memory_id(memory_id), memories.c.user_id == user_id)
    )).first()
    if row is None:
        raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
    return row


def event_row(**values: Any) -> dict[str, Any]:
    """A full ``memory_events`` row (bulk inserts need the same keys in every row)."""
    return {
        "reason": None, "old_text": None, "new_text": None,
        "old_importance": None, "new_importance": None, **values,
    }


async def log(conn: AsyncConnection, user_id: str, events: list[dict[str, Any]]) -> None:
    """Append events to the user's memory history, all stamped now."""
    if events:
        now = utcnow()
        await conn.execute(
            memory_events.insert(),
            [event_row(user_id=user_id, created_at=now, **event) for event in events],
        )
