"""Pure checks and normalisation of the graph's inputs (no I/O).

Names are matched normalised (NFKC, case-folded, runs of spaces collapsed); types
are normalised the same way with spaces as underscores ("Led to" -> "led_to").
Mappings take the spec's field names or the reference MCP memory server's
camelCase (``entityType``, ``relationType``, ``from``, ``to``, ``entityName``,
``contents``). Every error is an ``InvalidInputError`` raised before any write.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from truemem_core._validation import check_id, check_text
from truemem_core._validation import check_instant as _instant
from truemem_core.errors import InvalidInputError
from truemem_core.graph.records import EntitySpec, ObservationSpec, RelationSpec

MAX_NAME = 255
MAX_TYPE = 64
MAX_ITEMS = 10_000
MAX_DEPTH = 10


def norm(name: str) -> str:
    """The matching key of a name or alias."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def norm_type(value: str) -> str:
    return "_".join(unicodedata.normalize("NFKC", value).casefold().split())


def alias_keys(aliases: Sequence[str]) -> str:
    """``|a|b|``: every alias normalised, for one LIKE ``%|a|%``."""
    return "|" + "".join(norm(alias) + "|" for alias in aliases)


def check_name(value: Any, what: str = "entity name") -> str:
    name = " ".join(check_id(value, what, MAX_NAME).split())
    if not name:
        raise InvalidInputError(f"{what} must not be empty")
    if "|" in name:
        raise InvalidInputError(f"{what} must not contain '|'")
    return name


def check_type(value: Any, what: str = "type") -> str:
    kind = norm_type(check_id(value, what, MAX_TYPE))
    if not kind:
        raise InvalidInputError(f"{what} must not be empty")
    return kind


def check_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidInputError(f"confidence must be a number from 0 to 1, got {value!r}")
    return float(value)


def check_instant(value: Any, what: str) -> datetime | None:
    """None, or a timezone-aware datetime (an ISO 8601 text with an offset is accepted)."""
    return None if value is None else _instant(value, what, parse=True)


def check_depth(value: Any, what: str = "depth") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEPTH:
        raise InvalidInputError(f"{what} must be an int from 1 to {MAX_DEPTH}, got {value!r}")
    return value


def items(value: Any, what: str) -> list[Any]:
    """A list of inputs: one text or one mapping is not a list of them."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{what} must be a list, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise InvalidInputError(f"at most {MAX_ITEMS} {what} at a time")
    return list(value)


def _get(item: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if key in item:
            return item[key]
    return default


def _known(item: Mapping[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(str(key) for key in item if key not in allowed)
    if unknown:
        raise InvalidInputError(f"{what} has unknown field(s): {', '.join(unknown)}")


def _optional_type(value: Any, what: str) -> str | None:
    return None if value is None else check_type(value, what)


_ENTITY_KEYS = {"name", "type", "entityType", "aliases", "observations"}


def parse_entity(item: Any, max_chars: int) -> tuple[EntitySpec, list[ObservationSpec]]:
    """An entity and the observations a reference-server entity carries with it."""
    if isinstance(item, EntitySpec):
        item = {"name": item.name, "type": item.type, "aliases": item.aliases}
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"an entity must be an EntitySpec or a mapping, got {item!r}")
    _known(item, _ENTITY_KEYS, "entity")
    name = check_name(item.get("name"))
    kind = check_type(_get(item, "type", "entityType", default="thing"), "entity type")
    aliases = tuple(dict.fromkeys(
        check_name(alias, "alias") for alias in items(item.get("aliases", ()), "aliases")))
    texts = [check_text(text, "observation text", max_chars)
             for text in items(item.get("observations", ()), "observations")]
    spec = EntitySpec(name, kind, tuple(a for a in aliases if norm(a) != norm(name)))
    return spec, [ObservationSpec(name, text, entity_type=kind) for text in texts]


_OBSERVATION_KEYS = {"entity", "entityName", "text", "contents", "entity_type", "entityType",
                     "confidence", "valid_from", "validFrom"}


def parse_observations(item: Any, max_chars: int) -> list[ObservationSpec]:
    """One spec, or a reference-server ``{entityName, contents: [...]}`` as several."""
    if isinstance(item, ObservationSpec):
        item = {"entity": item.entity, "text": item.text, "entity_type": item.entity_type,
                "confidence": item.confidence, "valid_from": item.valid_from}
    if not isinstance(item, Mapping):
        raise InvalidInputError(
            f"an observation must be an ObservationSpec or a mapping, got {item!r}")
    _known(item, _OBSERVATION_KEYS, "observation")
    entity = check_name(_get(item, "entity", "entityName"))
    texts = [item["text"]] if "text" in item else items(item.get("contents"), "contents")
    kind = _optional_type(_get(item, "entity_type", "entityType"), "entity type")
    confidence = check_confidence(item.get("confidence", 1.0))
    since = check_instant(_get(item, "valid_from", "validFrom"), "valid_from")
    return [ObservationSpec(entity, check_text(text, "observation text", max_chars), kind,
                            confidence, since) for text in texts]


_RELATION_KEYS = {"source", "from", "type", "relationType", "target", "to", "source_type",
                  "target_type", "confidence", "evidence", "valid_from", "validFrom", "replaces"}


def parse_relation(item: Any, max_chars: int) -> RelationSpec:
    if isinstance(item, RelationSpec):
        item = {field: getattr(item, field) for field in RelationSpec.__dataclass_fields__}
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"a relation must be a RelationSpec or a mapping, got {item!r}")
    _known(item, _RELATION_KEYS, "relation")
    evidence = item.get("evidence")
    replaces = item.get("replaces")
    return RelationSpec(
        source=check_name(_get(item, "source", "from"), "relation source"),
        type=check_type(_get(item, "type", "relationType"), "relation type"),
        target=check_name(_get(item, "target", "to"), "relation target"),
        source_type=_optional_type(item.get("source_type"), "source_type"),
        target_type=_optional_type(item.get("target_type"), "target_type"),
        confidence=check_confidence(item.get("confidence", 1.0)),
        evidence=None if evidence is None else check_text(evidence, "evidence", max_chars),
        valid_from=check_instant(_get(item, "valid_from", "validFrom"), "valid_from"),
        replaces=None if replaces is None else check_name(replaces, "replaces"),
    )
