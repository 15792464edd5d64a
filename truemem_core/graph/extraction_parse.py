"""The graph part of an LLM's extraction answer, read strictly (pure).

Each fact the model returns may carry ``"graph"``: the entities, relations and
observations it states, named by their names (handles), never by ids::

    {"entities": [{"name": "Atlas", "type": "project"}],
     "relations": [{"from": "user", "type": "uses", "to": "PostgreSQL 16",
                    "replaces": "PostgreSQL 14", "evidence": "..."}],
     "observations": [{"entity": "db-01", "text": "Has 64 GB of RAM"}]}

Strict where the facts are lenient: a graph part that is not exactly this shape
(an unknown key, a missing name, a type that is not a short lower-case word, a
confidence outside 0-1) is dropped whole, and the fact it came with is kept.
A half-read graph would store relations whose ends were misread.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from truemem_core.errors import TrueMemError
from truemem_core.graph.records import EntitySpec, GraphFacts, ObservationSpec, RelationSpec

_NAME_CHARS = 200
_TEXT_CHARS = 500
_TYPE = re.compile(r"[a-z][a-z0-9_]{0,39}")
_KEYS = {
    "graph": {"entities", "relations", "observations"},
    "entity": {"name", "type", "entityType", "aliases"},
    "relation": {"from", "to", "type", "relationType", "source", "target", "evidence",
                 "replaces", "confidence"},
    "observation": {"entity", "text", "confidence"},
}


class MalformedGraph(TrueMemError, ValueError):
    """The graph part of an answer is not the documented shape."""


def parse_graph_json(text: str) -> GraphFacts:
    """:func:`parse_graph` of the JSON the extraction kept (``CandidateFact.graph``)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise MalformedGraph("the graph part is not JSON") from exc
    return parse_graph(value)


def parse_graph(value: Any) -> GraphFacts:
    """The graph part as specs; raises :class:`MalformedGraph` on anything off-shape."""
    part = _object(value, "graph")
    entities = tuple(_entity(item) for item in _list(part, "entities"))
    types = {entity.name.casefold(): entity.type for entity in entities}
    return GraphFacts(
        entities,
        tuple(_observation(item, types) for item in _list(part, "observations")),
        tuple(_relation(item, types) for item in _list(part, "relations")))


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict) or not set(value) <= _KEYS[what]:
        raise MalformedGraph(f"a {what} is not an object of the documented keys")
    return value


def _list(part: Mapping[str, Any], key: str) -> list[Any]:
    items = part.get(key, [])
    if not isinstance(items, list):
        raise MalformedGraph(f"{key} is not a list")
    return items


def _text(value: Any, limit: int) -> str:
    if not isinstance(value, str) or not " ".join(value.split()) or len(value) > limit:
        raise MalformedGraph("a name or text is empty, too long or not a string")
    return " ".join(value.split())


def _optional_text(value: Any, limit: int) -> str | None:
    return None if value is None else _text(value, limit)


def _type(value: Any) -> str:
    kind = "_".join(value.strip().lower().split()) if isinstance(value, str) else ""
    if not _TYPE.fullmatch(kind):
        raise MalformedGraph("a type is not a short lower-case word")
    return kind


def _confidence(value: Any) -> float:
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedGraph("a confidence is not a number")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise MalformedGraph("a confidence is outside 0-1")
    return float(value)


def _entity(value: Any) -> EntitySpec:
    item = _object(value, "entity")
    aliases = item.get("aliases", [])
    if not isinstance(aliases, list):
        raise MalformedGraph("aliases is not a list")
    return EntitySpec(_text(item.get("name"), _NAME_CHARS),
                      _type(item.get("type", item.get("entityType", "thing"))),
                      tuple(_text(alias, _NAME_CHARS) for alias in aliases))


def _relation(value: Any, types: Mapping[str, str]) -> RelationSpec:
    item = _object(value, "relation")
    source = _text(item.get("from", item.get("source")), _NAME_CHARS)
    target = _text(item.get("to", item.get("target")), _NAME_CHARS)
    return RelationSpec(
        source, _type(item.get("type", item.get("relationType"))), target,
        source_type=types.get(source.casefold()), target_type=types.get(target.casefold()),
        confidence=_confidence(item.get("confidence")),
        evidence=_optional_text(item.get("evidence"), _TEXT_CHARS),
        replaces=_optional_text(item.get("replaces"), _NAME_CHARS))


def _observation(value: Any, types: Mapping[str, str]) -> ObservationSpec:
    item = _object(value, "observation")
    entity = _text(item.get("entity"), _NAME_CHARS)
    return ObservationSpec(entity, _text(item.get("text"), _TEXT_CHARS),
                           entity_type=types.get(entity.casefold()),
                           confidence=_confidence(item.get("confidence")))
