"""``GraphStore``: the knowledge graph behind the facade; each method is one transaction.

Inputs are parsed and checked (``names``) before the transaction opens: bad input
raises ``InvalidInputError`` and nothing is written. Every statement is filtered
by ``user_id``: another user's entity behaves exactly like an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from truemem_core.graph.records import (
    Entity,
    EntitySpec,
    Graph,
    Hop,
    Observation,
    ObservationSpec,
    Relation,
    RelationSpec,
)
from truemem_core.settings import Settings
from truemem_core.storage.database import Database

EntityInput = EntitySpec | Mapping[str, Any]
ObservationInput = ObservationSpec | Mapping[str, Any]
RelationInput = RelationSpec | Mapping[str, Any]


class GraphStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    async def add_entities(self, user_id: Any, entities: Sequence[EntityInput]) -> list[Entity]:
        raise NotImplementedError

    async def add_observations(
        self, user_id: Any, observations: Sequence[ObservationInput]
    ) -> list[Observation]:
        raise NotImplementedError

    async def add_relations(
        self, user_id: Any, relations: Sequence[RelationInput]
    ) -> list[Relation]:
        raise NotImplementedError

    async def get_entity(
        self, user_id: Any, name_or_id: str, *, as_of: datetime | None,
        valid_at: datetime | None,
    ) -> Entity:
        raise NotImplementedError

    async def list_entities(
        self, user_id: Any, *, type: str | None, query: str | None, as_of: datetime | None,
        valid_at: datetime | None, limit: int | None,
    ) -> list[Entity]:
        raise NotImplementedError

    async def list_observations(
        self, user_id: Any, entity: str | None, *, as_of: datetime | None,
        valid_at: datetime | None,
    ) -> list[Observation]:
        raise NotImplementedError

    async def list_relations(
        self, user_id: Any, entity: str | None, *, type: str | None, as_of: datetime | None,
        valid_at: datetime | None,
    ) -> list[Relation]:
        raise NotImplementedError

    async def neighbours(
        self, user_id: Any, entity: str, *, as_of: datetime | None, valid_at: datetime | None,
    ) -> list[Relation]:
        raise NotImplementedError

    async def chain(
        self, user_id: Any, entity: str, *, direction: str, depth: int,
        as_of: datetime | None, valid_at: datetime | None,
    ) -> list[Hop]:
        raise NotImplementedError

    async def path(
        self, user_id: Any, a: str, b: str, *, max_depth: int, as_of: datetime | None,
        valid_at: datetime | None,
    ) -> list[Relation]:
        raise NotImplementedError

    async def graph(
        self, user_id: Any, *, as_of: datetime | None, valid_at: datetime | None,
    ) -> Graph:
        raise NotImplementedError

    async def delete_entities(self, user_id: Any, names: Sequence[str]) -> int:
        raise NotImplementedError

    async def delete_observations(
        self, user_id: Any, entity: str, texts: Sequence[str]
    ) -> int:
        raise NotImplementedError

    async def delete_relations(self, user_id: Any, relations: Sequence[RelationInput]) -> int:
        raise NotImplementedError
