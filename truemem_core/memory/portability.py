"""A user's memories out and back in: the export document, its validation, the import.

Sessions travel in the same document (``conversation.sessions`` reads and writes
them); ``_users.py`` puts the two together in one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_importance, check_kind, check_source, check_text
from truemem_core.embeddings import Vector
from truemem_core.errors import InvalidInputError
from truemem_core.memory import rows
from truemem_core.records import STATES
from truemem_core.storage.schema import memories, memory_events, utcnow

FORMAT = "truemem.user/1"


async def export_memories(conn: AsyncConnection, user: str) -> dict[str, list[dict[str, Any]]]:
    """``memories`` (each with its history) and ``deleted`` (histories of deleted ones)."""
    found = (await conn.execute(
        select(*rows.MEMORY_COLUMNS).where(memories.c.user_id == user)
        .order_by(memories.c.created_at))).all()
    events = (await conn.execute(
        select(memory_events).where(memory_events.c.user_id == user)
        .order_by(memory_events.c.id))).all()
    history: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        history.setdefault(event.memory_id, []).append(rows.to_event(event).to_dict())
    return {
        "memories": [
            {**rows.to_memory(row).to_dict(), "history": history.pop(row.id, [])}
            for row in found
        ],
        "deleted": [{"memory_id": i, "history": h} for i, h in history.items()],
    }


def parse_export(data: Any, max_chars: int) -> list[dict[str, Any]]:
    """Validate an export document's memories; ``InvalidInputError`` names the bad field."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise InvalidInputError(f"not a TrueMem export (expected format {FORMAT!r})")
    items = data.get("memories")
    if not isinstance(items, list):
        raise InvalidInputError("export has no 'memories' list")
    parsed = []
    for n, item in enumerate(items):
        where = f"memories[{n}]"
        try:
            parsed.append(_parse_memory(item, where, max_chars))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from exc
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"{where} is malformed: {exc!r}") from exc
    return parsed


def _parse_memory(item: Any, where: str, max_chars: int) -> dict[str, Any]:
    history = [
        {
            "action": e["action"], "reason": e.get("reason"),
            "old_text": e.get("old_text"), "new_text": e.get("new_text"),
            "old_importance": e.get("old_importance"),
            "new_importance": e.get("new_importance"),
            "created_at": datetime.fromisoformat(e["created_at"]),
        }
        for e in item.get("history", [])
    ]
    state = item.get("state", "active")
    if state not in STATES:
        raise InvalidInputError("state is not a lifecycle state")
    return {
        "text": check_text(item["text"], f"{where}.text", max_chars),
        "importance": check_importance(item["importance"]),
        "kind": check_kind(item.get("kind", "semantic")),
        "source": check_source(item.get("source", "manual")),
        "state": state,
        "reinforcements": int(item.get("reinforcements", 0)),
        "created_at": datetime.fromisoformat(item["created_at"]),
        "updated_at": datetime.fromisoformat(item["updated_at"]),
        "valid_to": (None if item.get("valid_to") is None
                     else datetime.fromisoformat(item["valid_to"])),
        "exported_id": _optional_id(item.get("id")),
        "superseded_by": _optional_id(item.get("superseded_by")),
        "history": history,
    }


def _optional_id(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected an id string, not {type(value).__name__}")


async def import_memories(
    conn: AsyncConnection, user: str, items: Sequence[dict[str, Any]], vectors: Vector,
    model_name: str,
) -> list[str]:
    """Write parsed memories under ``user``; returns their new ids, in order.

    Same texts, ranks, times and history as exported.

    Imported memories are not deduplicated; the caller prunes past the soft limit.
    """
    now = utcnow()
    new_ids = {item["exported_id"]: str(uuid.uuid4()) for item in items if item["exported_id"]}
    memory_rows, events = [], []
    for item, vector in zip(items, vectors, strict=True):
        memory_id = new_ids[item["exported_id"]] if item["exported_id"] else str(uuid.uuid4())
        memory_rows.append({
            "id": memory_id, "user_id": user, "text": item["text"],
            "importance": item["importance"], "kind": item["kind"],
            "source": item["source"], "state": item["state"],
            "reinforcements": item["reinforcements"], "embedding": vector,
            "embedding_model": model_name, "source_message_id": None,
            "created_at": item["created_at"], "updated_at": item["updated_at"],
            # a closed fact stays closed, pointing at its successor's new id
            "valid_to": item["valid_to"], "invalidated_at": item["valid_to"],
            "superseded_by": new_ids.get(item["superseded_by"] or ""),
        })
        for event in item["history"]:
            events.append(rows.event_row(**event, memory_id=memory_id, user_id=user))
        events.append(rows.event_row(memory_id=memory_id, user_id=user, action="imported",
                                     reason="import_user", new_text=item["text"],
                                     new_importance=item["importance"], created_at=now))
    if memory_rows:
        await conn.execute(memories.insert(), memory_rows)
        await conn.execute(memory_events.insert(), events)
    return [row["id"] for row in memory_rows]
