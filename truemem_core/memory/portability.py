"""A user's memories out and back in: the export document, its validation, the import.

Sessions travel in the same document (``conversation.sessions`` reads and writes
them); ``_users.py`` puts the two together in one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import (
    check_created_first,
    check_importance,
    check_kind,
    check_source,
    check_text,
    malformed,
    optional_int,
    parse_time,
)
from truemem_core.embeddings import Vector
from truemem_core.errors import InvalidInputError
from truemem_core.memory import rows
from truemem_core.records import ACTIONS, STATES
from truemem_core.storage.schema import memories, memory_events, utcnow

FORMAT = "truemem.user/1"
_FIELDS = {"format", "user_id", "exported_at", "memories", "deleted", "sessions", "graph",
           "store_items", "syntheses"}

T = TypeVar("T")


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


def parse_export(
    data: Any, max_chars: int
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Validate an export document's memories and its deleted memories' histories;
    ``InvalidInputError`` names the bad field."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise InvalidInputError(f"not a TrueMem export (expected format {FORMAT!r})")
    unknown = sorted(set(map(str, data)) - _FIELDS)
    if unknown:  # a misspelt part would be dropped unread
        raise InvalidInputError(f"export has unknown fields: {', '.join(unknown)}")
    items = data.get("memories")
    if not isinstance(items, list):
        raise InvalidInputError("export has no 'memories' list")
    deleted = data.get("deleted", [])
    if not isinstance(deleted, list):
        raise InvalidInputError("export 'deleted' must be a list")
    parsed = [_parsed(_parse_memory, item, f"memories[{n}]", max_chars)
              for n, item in enumerate(items)]
    histories = [_parsed(_parse_deleted, item, f"deleted[{n}]", max_chars)
                 for n, item in enumerate(deleted)]
    ids = [item["exported_id"] for item in parsed if item["exported_id"]]
    if len(set(ids)) < len(ids):
        raise InvalidInputError("export 'memories' holds two memories with the same id")
    return parsed, histories


def _parsed(parse: Callable[[Any, int], T], item: Any, where: str, max_chars: int) -> T:
    """``parse(item, max_chars)``, its errors as ``InvalidInputError`` naming ``where``."""
    try:
        return parse(item, max_chars)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from exc
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise malformed(where, exc) from exc


def _parse_memory(item: Any, max_chars: int) -> dict[str, Any]:
    state = item.get("state", "active")
    if state not in STATES:
        raise InvalidInputError("state is not a lifecycle state")
    created, updated = (parse_time(item["created_at"], "created_at"),
                        parse_time(item["updated_at"], "updated_at"))
    check_created_first(created, updated)
    return {
        "text": check_text(item["text"], "text", max_chars),
        "importance": check_importance(item["importance"]),
        "kind": check_kind(item.get("kind", "semantic")),
        "source": check_source(item.get("source", "manual")),
        "state": state,
        "reinforcements": _count(item.get("reinforcements", 0), "reinforcements"),
        "created_at": created,
        "updated_at": updated,
        "valid_to": (None if item.get("valid_to") is None
                     else parse_time(item["valid_to"], "valid_to")),
        # exports before it was exported: true from its creation
        "valid_from": (created if item.get("valid_from") is None
                       else parse_time(item["valid_from"], "valid_from")),
        "exported_id": _optional_id(item.get("id")),
        "source_message_id": optional_int(item.get("source_message_id"), "source_message_id"),
        "superseded_by": _optional_id(item.get("superseded_by")),
        "history": _history(item.get("history", []), max_chars),
    }


def _parse_deleted(item: Any, max_chars: int) -> list[dict[str, Any]]:
    return _history(item["history"], max_chars)


def _history(events: Any, max_chars: int) -> list[dict[str, Any]]:
    if not isinstance(events, list):
        raise InvalidInputError("history must be a list")
    return [_event(event, max_chars) for event in events]


def _event(event: Any, max_chars: int) -> dict[str, Any]:
    if event["action"] not in ACTIONS:
        raise InvalidInputError(f"a history action must be one of {', '.join(ACTIONS)}")
    parsed: dict[str, Any] = {"action": event["action"],
                              "created_at": parse_time(event["created_at"], "a history time")}
    for name in ("reason", "old_text", "new_text"):
        value = event.get(name)
        # a reason may quote two memory texts: it gets more room than one
        parsed[name] = None if value in (None, "") else check_text(
            value, f"a history {name}", max(max_chars, _MAX_REASON))
    for name in ("old_importance", "new_importance"):
        value = event.get(name)
        parsed[name] = None if value is None else check_importance(value)
    return parsed


_MAX_REASON = 10_000
_MAX_COUNT = 2**31 - 1  # an INTEGER column on PostgreSQL


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise InvalidInputError(f"{what} must be an int from 0 to {_MAX_COUNT}, got {value!r}")
    return value


def _renamed(reason: str | None, new_ids: Mapping[str, str]) -> str | None:
    """A superseded memory's reason names its successor, ``... (by <id>)``: the new id."""
    if reason is None or not reason.endswith(")") or " (by " not in reason:
        return reason
    head, _, old = reason[:-1].rpartition(" (by ")
    return f"{head} (by {new_ids[old]})" if old in new_ids else reason


def _optional_id(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected an id string, not {type(value).__name__}")


async def import_memories(
    conn: AsyncConnection, user: str, items: Sequence[dict[str, Any]], vectors: Vector,
    model_name: str, deleted: Sequence[Sequence[dict[str, Any]]] = (),
    message_ids: Mapping[int, int] | None = None,
) -> list[str]:
    """Write parsed memories under ``user``; returns their new ids, in order.

    Same texts, ranks, times and history as exported; a deleted memory's history (its
    texts already gone) under a new id of its own, as ``export_user`` gives it. A memory
    keeps its source message when the import wrote that message (``message_ids``: new
    message ids by exported ones).

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
            "embedding_model": model_name,
            "source_message_id": (message_ids or {}).get(item["source_message_id"]),
            "created_at": item["created_at"], "updated_at": item["updated_at"],
            # a closed fact stays closed, pointing at its successor's new id
            "valid_from": item["valid_from"],
            "valid_to": item["valid_to"], "invalidated_at": item["valid_to"],
            "superseded_by": new_ids.get(item["superseded_by"] or ""),
        })
        for event in item["history"]:
            events.append(rows.event_row(**{**event, "reason": _renamed(event["reason"], new_ids)},
                                         memory_id=memory_id, user_id=user))
        events.append(rows.event_row(memory_id=memory_id, user_id=user, action="imported",
                                     reason="import_user", new_text=item["text"],
                                     new_importance=item["importance"], created_at=now))
    for history in deleted:
        gone = str(uuid.uuid4())
        events += [rows.event_row(**event, memory_id=gone, user_id=user) for event in history]
    if memory_rows:
        await conn.execute(memories.insert(), memory_rows)
    if events:
        await conn.execute(memory_events.insert(), events)
    return [row["id"] for row in memory_rows]
