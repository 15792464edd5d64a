"""What the knowledge graph returns (records) and takes (specs): frozen dataclasses.

Records are JSON-friendly via ``to_dict``. Specs name entities by *handle*: a
name (matched normalised, or by alias), optionally with a type; a missing entity
is created when a fact names it.

Bi-temporal: every observation and relation carries ``valid_from`` / ``valid_to``
(when it was true in the world) and ``recorded_at`` / ``invalidated_at`` (when
the system believed it). ``None`` as an end means open.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

CAUSAL_TYPES: tuple[str, ...] = (
    "caused", "prevented", "triggered", "blocked", "enabled", "led_to", "required", "mitigated",
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return value


class _Record:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {key: _jsonable(value) for key, value in asdict(self).items()}  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class Entity(_Record):
    """A typed thing of a user's world (a person, a project, a server…)."""

    id: str
    user_id: str
    name: str
    type: str
    aliases: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Observation(_Record):
    """A statement about one entity, with where it came from and its four timestamps."""

    id: str
    entity_id: str
    entity: str
    text: str
    confidence: float
    source_memory_id: str | None
    source_message_id: int | None
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    invalidated_at: datetime | None


@dataclass(frozen=True, slots=True)
class Relation(_Record):
    """``source`` --type--> ``target``, with its evidence and its four timestamps."""

    id: str
    source: str
    type: str
    target: str
    source_id: str
    target_id: str
    confidence: float
    evidence: str | None
    evidence_memory_ids: tuple[str, ...]
    evidence_message_ids: tuple[int, ...]
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    invalidated_at: datetime | None


@dataclass(frozen=True, slots=True)
class Hop(_Record):
    """One relation of a causal chain, ``depth`` hops from the entity asked about."""

    relation: Relation
    depth: int


@dataclass(frozen=True, slots=True)
class Graph(_Record):
    """A user's whole graph at one instant, or a page of it: ``next_offset`` is where the
    next page starts (None: this one ended every list)."""

    entities: list[Entity] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    next_offset: int | None = None


# -- inputs --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EntitySpec:
    name: str
    type: str = "thing"
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ObservationSpec:
    entity: str
    text: str
    entity_type: str | None = None
    confidence: float = 1.0
    valid_from: datetime | None = None


@dataclass(frozen=True, slots=True)
class RelationSpec:
    """``replaces``: a target whose current (source, type, replaces) relation this one
    closes ("migrated from PostgreSQL 14 to 16"), with ``valid_to`` = this one's
    ``valid_from`` (or now)."""

    source: str
    type: str
    target: str
    source_type: str | None = None
    target_type: str | None = None
    confidence: float = 1.0
    evidence: str | None = None
    valid_from: datetime | None = None
    replaces: str | None = None


@dataclass(frozen=True, slots=True)
class GraphFacts:
    entities: tuple[EntitySpec, ...] = ()
    observations: tuple[ObservationSpec, ...] = ()
    relations: tuple[RelationSpec, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.entities or self.observations or self.relations)
