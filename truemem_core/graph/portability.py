"""A user's graph out and back in, with every row's four timestamps and retracted rows.

The export holds ids so that rows refer to each other; an import gives every row a
new id, maps the memories' ids through the import's own mapping (a fact whose
memory is not in the document keeps no memory id) and drops message ids
(imported messages are numbered anew).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_text, malformed, parse_time
from truemem_core.errors import InvalidInputError
from truemem_core.graph.names import alias_keys, check_confidence, check_name, check_type, norm
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations

e, o, r = graph_entities, graph_observations, graph_relations
MAX_TEXT = 100_000  # what the add_* calls accepted when the rows were written
_ENTITY = ("id", "name", "type", "aliases", "source_memory_id", "created_at", "invalidated_at")
_TIMES = ("valid_from", "valid_to", "recorded_at", "invalidated_at")
_OBSERVATION = ("id", "entity_id", "text", "confidence", "source_memory_id",
                "source_message_id", *_TIMES)
_RELATION = ("id", "source_id", "type", "target_id", "confidence", "evidence",
             "evidence_memory_ids", "evidence_message_ids", *_TIMES)


def _out(row: Any, columns: tuple[str, ...]) -> dict[str, Any]:
    values = {name: getattr(row, name) for name in columns}
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}


async def export_graph(conn: AsyncConnection, user: str) -> dict[str, list[dict[str, Any]]]:
    def rows(table: Any, order: Any) -> Any:
        return conn.execute(select(table).where(table.c.user_id == user).order_by(order))
    return {
        "entities": [_out(row, _ENTITY) for row in await rows(e, e.c.created_at)],
        "observations": [_out(row, _OBSERVATION) for row in await rows(o, o.c.recorded_at)],
        "relations": [_out(row, _RELATION) for row in await rows(r, r.c.recorded_at)],
    }


def _time(value: Any, what: str) -> datetime | None:
    """A time of the export; the world's validity of a fact may lie ahead, not the
    system's times."""
    return None if value is None else parse_time(value, what, future=what.startswith("valid"))


def _entity(item: Mapping[str, Any]) -> dict[str, Any]:
    aliases = [check_name(a, "alias") for a in item.get("aliases") or []]
    name = check_name(item["name"])
    return {"id": str(item["id"]), "name": name, "norm": norm(name),
            "type": check_type(item["type"]), "aliases": aliases,
            "alias_keys": alias_keys(aliases), "source_memory_id": item.get("source_memory_id"),
            "created_at": _time(item["created_at"], "created_at"),
            "invalidated_at": _time(item.get("invalidated_at"), "invalidated_at")}


def _fact(item: Mapping[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    fact = {name: item.get(name) for name in columns}
    fact.update({name: _time(item.get(name), name) for name in _TIMES})
    if fact["recorded_at"] is None:
        raise InvalidInputError("recorded_at is missing")
    fact["confidence"] = check_confidence(item.get("confidence", 1.0))
    if "text" in columns:
        fact["text"] = check_text(item["text"], "observation text", MAX_TEXT)
    if "type" in columns:
        fact["type"] = check_type(item["type"], "relation type")
    for name in ("evidence_memory_ids", "evidence_message_ids"):
        if name in columns:
            fact[name] = _list(item.get(name), name)
    return fact


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError(f"{what} must be a list")
    return value


def parse_graph(data: Any) -> dict[str, list[dict[str, Any]]]:
    """Validate an export's ``graph`` (absent: an empty graph)."""
    if data is None:
        return {"entities": [], "observations": [], "relations": []}
    try:
        parsed = {"entities": [_entity(x) for x in data.get("entities", [])],
                  "observations": [_fact(x, _OBSERVATION) for x in data.get("observations", [])],
                  "relations": [_fact(x, _RELATION) for x in data.get("relations", [])]}
    except InvalidInputError as exc:
        raise InvalidInputError(f"export 'graph': {exc}") from exc
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise malformed("export 'graph'", exc) from exc
    known = {x["id"] for x in parsed["entities"]}
    ends = [x["entity_id"] for x in parsed["observations"]]
    ends += [x[k] for x in parsed["relations"] for k in ("source_id", "target_id")]
    if not set(ends) <= known:
        raise InvalidInputError("export 'graph' refers to an entity it does not hold")
    return parsed


async def import_graph(
    conn: AsyncConnection, user: str, graph: dict[str, list[dict[str, Any]]],
    memory_ids: Mapping[str, str], message_ids: Mapping[int, int],
) -> None:
    """Write a parsed graph under ``user`` with new ids; a current entity the user already
    has (same name and type) is that one. Memories and messages it cites by their
    exported ids are cited by their new ones (none if the export did not hold them)."""
    ids = {x["id"]: str(uuid.uuid4()) for x in graph["entities"]}
    have = {(row.norm, row.type): row.id for row in await conn.execute(
        select(e.c.id, e.c.norm, e.c.type).where(e.c.user_id == user,
                                                 e.c.invalidated_at.is_(None)))}
    kept = []
    for x in graph["entities"]:
        same = have.get((x["norm"], x["type"])) if x["invalidated_at"] is None else None
        if same is None:
            kept.append(x)
        else:
            ids[x["id"]] = same

    def memory(value: Any) -> str | None:
        return memory_ids.get(value) if isinstance(value, str) else None

    def message(value: Any) -> int | None:
        return message_ids.get(value) if isinstance(value, int) else None

    entities = [{**x, "id": ids[x["id"]], "user_id": user,
                 "source_memory_id": memory(x["source_memory_id"])} for x in kept]
    facts = [{**x, "id": str(uuid.uuid4()), "user_id": user, "entity_id": ids[x["entity_id"]],
              "source_memory_id": memory(x["source_memory_id"]),
              "source_message_id": message(x["source_message_id"])}
             for x in graph["observations"]]
    links = [{**x, "id": str(uuid.uuid4()), "user_id": user, "source_id": ids[x["source_id"]],
              "target_id": ids[x["target_id"]],
              "evidence_message_ids": [m for m in map(message, x["evidence_message_ids"]) if m],
              "evidence_memory_ids": [m for m in map(memory, x["evidence_memory_ids"]) if m]}
             for x in graph["relations"]]
    for table, values in ((e, entities), (o, facts), (r, links)):
        if values:
            await conn.execute(table.insert(), values)
