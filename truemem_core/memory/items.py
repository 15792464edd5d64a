"""Store items: JSON documents by namespace and key, each indexed by one memory.

The rows of ``store_items`` (what ``truemem_integrations.langgraph`` stores), the pure
checks and filters on them, and their SQL; every function takes the caller's
connection. A namespace is a tuple of labels, stored joined with ``.``, so a label
holds no ``.``. Every query but ``namespaces`` and a search above the user level is
filtered by ``user_id``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_created_first, check_id, is_storable, parse_time
from truemem_core.errors import InvalidInputError
from truemem_core.storage.schema import store_items, utcnow

MAX_LABEL_CHARS = 255
MAX_NAMESPACE_CHARS = 1024
MAX_KEY_CHARS = 1024
MAX_VALUE_BYTES = 1 << 20  # a store value as JSON (UTF-8): 1 MiB
MAX_VALUE_DEPTH = 100  # objects and arrays within each other
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True, slots=True)
class StoreItem:
    """A stored document: where it is, its value, when it was written, the memory that
    indexes it (None: not indexed) and, from a search with a query, its score."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    memory_id: str | None = None
    score: float | None = None


# -- pure checks and filters ------------------------------------------------------------


TEXT_FIELDS = ("content", "text", "memory", "data")  # what a memory-like value calls its text


def item_text(value: Mapping[str, Any]) -> str:
    """What a JSON value says: its own text field (``content``, ``text``, ``memory`` or
    ``data``, LangMem's ``{"content": {"content": ...}}`` too), else every string it
    holds, depth first in the order of its keys, one a line ("" when it holds none)."""
    for name in TEXT_FIELDS:
        found = value.get(name)
        if isinstance(found, Mapping) and isinstance(found.get(name), str):
            found = found[name]
        if isinstance(found, str) and found.strip():
            return found
    return "\n".join(_strings(value))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, Mapping):
        return [s for child in value.values() for s in _strings(child)]
    if isinstance(value, list):
        return [s for child in value for s in _strings(child)]
    return []


def check_namespace(value: Any, what: str = "namespace", *, empty: bool = False) -> tuple[str, ...]:
    """A tuple of non-empty labels without ``.``; ``empty`` allows ``()`` (a prefix)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{what} must be a tuple of str, got {type(value).__name__}")
    labels = tuple(value)
    if not labels and not empty:
        raise InvalidInputError(f"{what} must have at least one label")
    for label in labels:
        check_id(label, f"a label of {what}", MAX_LABEL_CHARS)
        if "." in label:
            raise InvalidInputError(f"a label of {what} cannot contain '.': {label!r}")
    if len(joined(labels)) > MAX_NAMESPACE_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_NAMESPACE_CHARS} characters")
    return labels


def check_key(value: Any) -> str:
    return check_id(value, "key", MAX_KEY_CHARS)


def check_value(value: Any, what: str = "value") -> dict[str, Any]:
    """A JSON object (a mapping with str keys) as a plain dict, copied; at most
    ``MAX_VALUE_BYTES`` as JSON and ``MAX_VALUE_DEPTH`` containers deep."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(
            f"{what} must be a mapping with str keys (a JSON object), got {type(value).__name__}")
    try:
        dumped = json.dumps(value, allow_nan=False, ensure_ascii=False)
        copied: dict[str, Any] = json.loads(dumped)
    except RecursionError as exc:
        raise InvalidInputError(too_deep(what)) from exc
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serialisable: {exc}") from exc
    if len(dumped) > MAX_VALUE_BYTES or len(dumped.encode("utf-8", "surrogatepass")) \
            > MAX_VALUE_BYTES:
        raise InvalidInputError(
            f"{what} is larger than {MAX_VALUE_BYTES:,} bytes as JSON: keep large "
            "documents elsewhere and store a reference")
    # what UTF-8 cannot carry, and NUL, which PostgreSQL's jsonb refuses
    if not is_storable(dumped) or any("\x00" in s for s in _every_string(copied, what)):
        raise InvalidInputError(f"{what} holds a NUL or an unpaired surrogate")
    return copied


def too_deep(what: str) -> str:
    return f"{what} is nested more than {MAX_VALUE_DEPTH} levels deep"


def _every_string(value: Any, what: str) -> list[str]:
    """Every key and string a JSON value holds (without recursion: an InvalidInputError
    past ``MAX_VALUE_DEPTH`` levels, not a RecursionError)."""
    found, todo = [], [(value, 0)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, str):
            found.append(node)
            continue
        if isinstance(node, dict | list):
            if depth >= MAX_VALUE_DEPTH:
                raise InvalidInputError(too_deep(what))
            children = [*node, *node.values()] if isinstance(node, dict) else node
            todo.extend((child, depth + 1) for child in children)
    return found


def check_filter(value: Any) -> dict[str, Any]:
    """A filter on value fields: ``{field: value}`` or ``{field: {"$op": value}}``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(f"filter must be a mapping of field -> value, got {value!r}")
    for field, wanted in value.items():
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            unknown = [k for k in wanted if k not in OPERATORS]
            if unknown:
                raise InvalidInputError(
                    f"filter on {field!r}: unknown operator {unknown[0]!r} "
                    f"(use {', '.join(OPERATORS)})")
    return dict(value)


def joined(namespace: Sequence[str]) -> str:
    return ".".join(namespace)


def _field(value: Mapping[str, Any], path: str) -> Any:
    """The value of a field: a key, else a dotted path into nested objects (None: absent)."""
    if path in value or "." not in path:
        return value.get(path)
    here: Any = value
    for part in path.split("."):
        if not isinstance(here, Mapping):
            return None
        here = here.get(part)
    return here


def _compare(found: Any, operator: str, wanted: Any) -> bool:
    if operator == "$eq":
        return bool(found == wanted)
    if operator == "$ne":
        return bool(found != wanted)
    if found is None or (isinstance(found, float) and math.isnan(found)):
        return False
    try:
        if operator == "$gt":
            return bool(found > wanted)
        if operator == "$gte":
            return bool(found >= wanted)
        if operator == "$lt":
            return bool(found < wanted)
        return bool(found <= wanted)
    except TypeError:  # a number against a text: no match
        return False


def _holds(found: Any, wanted: Any) -> bool:
    """One condition, as LangGraph's stores read it: operators; an object matches when each
    of its fields does (the document may have more); a list item by item; else equality."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_compare(found, op, operand) for op, operand in wanted.items())
        return isinstance(found, Mapping) and all(
            _holds(found.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return isinstance(found, list | tuple) and len(found) == len(wanted) and all(
            _holds(f, w) for f, w in zip(found, wanted, strict=True))
    return bool(found == wanted)


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """Whether a document passes a (checked) filter: every condition holds. A field is a
    key or a dotted path; an absent field is None (it matches only ``$ne``)."""
    return all(_holds(_field(value, path), wanted) for path, wanted in conditions.items())


def to_item(row: Any, score: float | None = None) -> StoreItem:
    return StoreItem(
        namespace=tuple(row.namespace.split(".")), key=row.key, value=row.value,
        created_at=row.created_at, updated_at=row.updated_at, memory_id=row.memory_id,
        score=score)


# -- SQL --------------------------------------------------------------------------------


def under(prefix: Sequence[str]) -> Any:
    """The rows whose namespace is ``prefix`` or below it (every row for ``()``)."""
    if not prefix:
        return store_items.c.namespace.is_not(None)
    name = joined(prefix)
    return or_(store_items.c.namespace == name,
               store_items.c.namespace.startswith(name + ".", autoescape=True))


async def fetch(
    conn: AsyncConnection, user: str, namespace: Sequence[str], key: str
) -> Row[Any] | None:
    return (await conn.execute(select(store_items).where(
        store_items.c.user_id == user, store_items.c.namespace == joined(namespace),
        store_items.c.key == key))).first()


async def write(
    conn: AsyncConnection, user: str, namespace: Sequence[str], key: str,
    value: dict[str, Any], memory_id: str | None, old: Row[Any] | None,
) -> None:
    """Insert the item, or update it in place (its ``created_at`` kept)."""
    now = utcnow()
    if old is None:
        await conn.execute(store_items.insert().values(
            user_id=user, namespace=joined(namespace), key=key, value=value,
            memory_id=memory_id, created_at=now, updated_at=now))
        return
    await conn.execute(store_items.update().where(
        store_items.c.user_id == user, store_items.c.namespace == joined(namespace),
        store_items.c.key == key).values(value=value, memory_id=memory_id, updated_at=now))


async def unlink(conn: AsyncConnection, user: str, namespace: Sequence[str], key: str) -> None:
    """The item is no longer indexed by its memory (which the caller then deletes)."""
    await conn.execute(store_items.update().where(
        store_items.c.user_id == user, store_items.c.namespace == joined(namespace),
        store_items.c.key == key).values(memory_id=None))


async def remove(conn: AsyncConnection, user: str, namespace: Sequence[str], key: str) -> None:
    await conn.execute(store_items.delete().where(
        store_items.c.user_id == user, store_items.c.namespace == joined(namespace),
        store_items.c.key == key))


async def others_indexed_by(
    conn: AsyncConnection, user: str, memory_id: str, namespace: Sequence[str], key: str
) -> int:
    """How many other items the memory indexes (an import may fold two into one)."""
    found = await conn.execute(select(store_items.c.key).where(
        store_items.c.user_id == user, store_items.c.memory_id == memory_id,
        or_(store_items.c.namespace != joined(namespace), store_items.c.key != key)))
    return len(found.all())


async def forget_memories(conn: AsyncConnection, user: str, ids: Sequence[str]) -> None:
    """Delete the items these memories index (their memories are being deleted)."""
    if ids:
        await conn.execute(store_items.delete().where(
            store_items.c.user_id == user, store_items.c.memory_id.in_(list(ids))))


def final(moves: Mapping[str, str], memory_id: str) -> str:
    """Where a memory ended up after a chain of folds (a into b, then b into c: c)."""
    seen = {memory_id}
    while memory_id in moves and moves[memory_id] not in seen:
        memory_id = moves[memory_id]
        seen.add(memory_id)
    return memory_id


async def repoint(conn: AsyncConnection, user: str, moves: Mapping[str, str]) -> None:
    """Items indexed by memories folded into others are indexed by those now (one read,
    and a write only for the rare item whose memory was folded)."""
    if not moves:
        return
    found = await conn.execute(select(store_items.c.memory_id).distinct().where(
        store_items.c.user_id == user, store_items.c.memory_id.in_(list(moves))))
    for (memory_id,) in found.all():
        await conn.execute(store_items.update().where(
            store_items.c.user_id == user, store_items.c.memory_id == memory_id)
            .values(memory_id=final(moves, memory_id)))


async def listed(
    conn: AsyncConnection, user: str | None, prefix: Sequence[str], *,
    limit: int | None, offset: int,
) -> list[Row[Any]]:
    """Items under ``prefix`` (of ``user``, or of every user), newest first."""
    stmt = select(store_items).where(under(prefix))
    if user is not None:
        stmt = stmt.where(store_items.c.user_id == user)
    stmt = stmt.order_by(store_items.c.updated_at.desc(), store_items.c.namespace,
                         store_items.c.key).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    return list(await conn.execute(stmt))


def indexed_under(user: str, prefix: Sequence[str]) -> Any:
    """The ids of the memories that index the user's items under ``prefix`` (a subquery)."""
    return select(store_items.c.memory_id).where(
        store_items.c.user_id == user, under(prefix), store_items.c.memory_id.is_not(None))


async def of_memories(
    conn: AsyncConnection, user: str, prefix: Sequence[str], ids: Sequence[str]
) -> list[Row[Any]]:
    if not ids:
        return []
    return list(await conn.execute(select(store_items).where(
        store_items.c.user_id == user, under(prefix), store_items.c.memory_id.in_(list(ids)))
        .order_by(store_items.c.namespace, store_items.c.key)))


async def namespaces(conn: AsyncConnection) -> list[tuple[str, ...]]:
    """Every namespace that holds an item, sorted."""
    found = await conn.execute(select(store_items.c.namespace).distinct())
    return sorted(tuple(name.split(".")) for (name,) in found)


async def of_user(conn: AsyncConnection, user: str) -> list[Row[Any]]:
    return list(await conn.execute(select(store_items).where(store_items.c.user_id == user)
                                   .order_by(store_items.c.namespace, store_items.c.key)))


# -- a user's export (``_users``) ---------------------------------------------------------


def exported(row: Any) -> dict[str, Any]:
    return {"namespace": list(row.namespace.split(".")), "key": row.key, "value": row.value,
            "memory_id": row.memory_id, "created_at": row.created_at.isoformat(),
            "updated_at": row.updated_at.isoformat()}


def parse_exported(found: Any, old_user: Any, new_user: str) -> list[dict[str, Any]]:
    """An export's ``store_items`` (absent in older exports: none), validated; a label
    equal to the exported user id becomes ``new_user``, so that the namespace that named
    the user names the new one."""
    if found is None:
        return []
    if not isinstance(found, list):
        raise InvalidInputError("export 'store_items' must be a list")
    parsed = []
    for n, item in enumerate(found):
        try:
            if not isinstance(item, Mapping):
                raise InvalidInputError("not an object")
            labels = [new_user if label == old_user else label
                      for label in check_namespace(item.get("namespace"))]
            created, updated = (parse_time(item["created_at"], "created_at"),
                                parse_time(item["updated_at"], "updated_at"))
            check_created_first(created, updated)
            parsed.append({
                "namespace": tuple(labels), "key": check_key(item.get("key")),
                "value": check_value(item.get("value")), "memory_id": item.get("memory_id"),
                "created_at": created, "updated_at": updated})
        except (InvalidInputError, KeyError, ValueError) as exc:
            raise InvalidInputError(f"export 'store_items'[{n}]: {exc}") from exc
    places = {(item["namespace"], item["key"]) for item in parsed}
    if len(places) < len(parsed):
        raise InvalidInputError("export 'store_items' holds an item twice (namespace and key)")
    return parsed


async def import_exported(
    conn: AsyncConnection, user: str, parsed: Sequence[Mapping[str, Any]],
    new_ids: Mapping[str, str],
) -> None:
    """Write an export's items under ``user``, each indexed by its memory's new id (none
    when that memory was not in the export); an item already there is replaced."""
    for item in parsed:
        await remove(conn, user, item["namespace"], item["key"])
    if parsed:
        await conn.execute(store_items.insert(), [
            {"user_id": user, "namespace": joined(item["namespace"]), "key": item["key"],
             "value": item["value"], "memory_id": new_ids.get(item["memory_id"] or ""),
             "created_at": item["created_at"], "updated_at": item["updated_at"]}
            for item in parsed])
