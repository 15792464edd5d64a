"""``GraphService``: the knowledge graph behind the facade; each method is one transaction.

Inputs are parsed and checked (``names``) before the transaction opens, and
handles resolved before the first write: bad input raises ``InvalidInputError``
and nothing is written. Every statement is filtered by ``user_id``: another
user's entity behaves exactly like an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from truemem_core._validation import (
    check_count,
    check_k,
    check_storable,
    check_text,
    check_user_id,
)
from truemem_core.errors import InvalidInputError
from truemem_core.graph import names, reads, retract, timeline, traversal
from truemem_core.graph.entities import resolve
from truemem_core.graph.records import (
    Entity,
    EntitySpec,
    Graph,
    GraphFacts,
    Hop,
    Observation,
    ObservationSpec,
    Relation,
    RelationSpec,
)
from truemem_core.graph.write import Applied, apply_facts
from truemem_core.settings import Settings
from truemem_core.storage.database import Database
from truemem_core.storage.schema import utcnow

EntityInput = EntitySpec | Mapping[str, Any]
ObservationInput = ObservationSpec | Mapping[str, Any]
RelationInput = RelationSpec | Mapping[str, Any]
_Instant = datetime | None


class GraphService:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    def _user(self, user_id: Any) -> str:
        return check_user_id(user_id, self.settings.max_id_chars)

    async def _apply(self, user: str, facts: GraphFacts) -> Applied:
        async with self.db.writing(user) as conn:
            return await apply_facts(conn, user, facts, source_memory_id=None,
                                     source_message_id=None, now=utcnow())

    # -- writes --------------------------------------------------------------------

    async def add_entities(self, user_id: Any, entities: Sequence[EntityInput]) -> list[Entity]:
        user = self._user(user_id)
        limit = self.settings.max_text_chars
        parsed = [names.parse_entity(item, limit) for item in names.items(entities, "entities")]
        facts = GraphFacts(tuple(spec for spec, _ in parsed),
                           tuple(obs for _, said in parsed for obs in said))
        return (await self._apply(user, facts)).entities

    async def add_observations(
        self, user_id: Any, observations: Sequence[ObservationInput]
    ) -> list[Observation]:
        user = self._user(user_id)
        limit = self.settings.max_text_chars
        specs = [spec for item in names.items(observations, "observations")
                 for spec in names.parse_observations(item, limit)]
        return (await self._apply(user, GraphFacts(observations=tuple(specs)))).observations

    async def add_relations(
        self, user_id: Any, relations: Sequence[RelationInput]
    ) -> list[Relation]:
        user = self._user(user_id)
        specs = [names.parse_relation(item, self.settings.max_text_chars)
                 for item in names.items(relations, "relations")]
        return (await self._apply(user, GraphFacts(relations=tuple(specs)))).relations

    async def delete_entities(self, user_id: Any, entity_names: Sequence[str]) -> int:
        user = self._user(user_id)
        handles = [names.check_name(name) for name in names.items(entity_names, "names")]
        async with self.db.writing(user) as conn:
            return await retract.entities(conn, user, handles, utcnow())

    async def delete_observations(
        self, user_id: Any, entity: str, texts: Sequence[str]
    ) -> int:
        user = self._user(user_id)
        name = names.check_name(entity)
        said = [check_text(text, "observation text", self.settings.max_text_chars)
                for text in names.items(texts, "texts")]
        async with self.db.writing(user) as conn:
            return await retract.observations(conn, user, name, said, utcnow())

    async def delete_relations(self, user_id: Any, relations: Sequence[RelationInput]) -> int:
        user = self._user(user_id)
        specs = [names.parse_relation(item, self.settings.max_text_chars)
                 for item in names.items(relations, "relations")]
        async with self.db.writing(user) as conn:
            return await retract.relations(conn, user, specs, utcnow())

    # -- reads ---------------------------------------------------------------------

    def _times(self, as_of: Any, valid_at: Any) -> tuple[_Instant, _Instant]:
        return names.check_instant(as_of, "as_of"), names.check_instant(valid_at, "valid_at")

    async def get_entity(
        self, user_id: Any, name_or_id: str, *, as_of: _Instant, valid_at: _Instant,
    ) -> Entity:
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        async with self.db.transaction(readonly=True) as conn:
            return await resolve(conn, user, name_or_id, as_of=as_of)

    async def list_entities(
        self, user_id: Any, *, type: str | None, query: str | None, as_of: _Instant,
        valid_at: _Instant, limit: int | None,
    ) -> list[Entity]:
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        kind = None if type is None else names.check_type(type, "type")
        if query is not None and not isinstance(query, str):
            raise InvalidInputError("query must be a str")
        if query is not None:
            check_storable(query, "query")
        size = None if limit is None else check_k(limit, "limit")
        async with self.db.transaction(readonly=True) as conn:
            return await reads.list_entities(conn, user, type=kind, query=query, as_of=as_of,
                                             limit=size)

    async def list_observations(
        self, user_id: Any, entity: str | None, *, as_of: _Instant, valid_at: _Instant,
    ) -> list[Observation]:
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        async with self.db.transaction(readonly=True) as conn:
            owner = None if entity is None else (await resolve(conn, user, entity, as_of=as_of)).id
            return await reads.list_observations(conn, user, owner, as_of=as_of,
                                                 valid_at=valid_at)

    async def list_relations(
        self, user_id: Any, entity: str | None, *, type: str | None, as_of: _Instant,
        valid_at: _Instant,
    ) -> list[Relation]:
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        kind = None if type is None else names.check_type(type, "type")
        async with self.db.transaction(readonly=True) as conn:
            end = None if entity is None else (await resolve(conn, user, entity, as_of=as_of)).id
            return await reads.list_relations(conn, user, end, type=kind, as_of=as_of,
                                              valid_at=valid_at)

    async def timeline(
        self, user_id: Any, entity: str, *, as_of: _Instant, retracted: bool,
    ) -> tuple[list[Observation], list[Relation]]:
        user = self._user(user_id)
        as_of, _ = self._times(as_of, None)
        async with self.db.transaction(readonly=True) as conn:
            owner = (await resolve(conn, user, entity, as_of=as_of)).id
            return await timeline.timeline(conn, user, owner, as_of=as_of,
                                           retracted=bool(retracted))

    async def neighbours(
        self, user_id: Any, entity: str, *, as_of: _Instant, valid_at: _Instant,
    ) -> list[Relation]:
        if entity is None:
            raise InvalidInputError("neighbours needs an entity")
        return await self.list_relations(user_id, entity, type=None, as_of=as_of,
                                         valid_at=valid_at)

    async def chain(
        self, user_id: Any, entity: str, *, direction: traversal.Direction, depth: int,
        as_of: _Instant, valid_at: _Instant,
    ) -> list[Hop]:
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        depth = names.check_depth(depth)
        async with self.db.transaction(readonly=True) as conn:
            start = await resolve(conn, user, entity, as_of=as_of)
            return await traversal.chain(conn, user, start.id, direction=direction, depth=depth,
                                         as_of=as_of, valid_at=valid_at)

    async def path(
        self, user_id: Any, a: str, b: str, *, max_depth: int, as_of: _Instant,
        valid_at: _Instant,
    ) -> list[Relation]:
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        depth = names.check_depth(max_depth, "max_depth")
        async with self.db.transaction(readonly=True) as conn:
            start = await resolve(conn, user, a, as_of=as_of)
            end = await resolve(conn, user, b, as_of=as_of)
            if start.id == end.id:
                return []
            return await traversal.path(conn, user, start.id, end.id, max_depth=depth,
                                        as_of=as_of, valid_at=valid_at)

    async def graph(
        self, user_id: Any, *, as_of: _Instant, valid_at: _Instant, limit: Any = None,
        offset: Any = 0,
    ) -> Graph:
        """The whole graph, or with ``limit`` a page: from ``offset`` on, up to ``limit``
        entities (with all their observations) and up to ``limit`` relations, each list
        in its own order (one more row of each is read to know whether a page follows)."""
        user = self._user(user_id)
        as_of, valid_at = self._times(as_of, valid_at)
        size = None if limit is None else check_k(limit, "limit")
        start = check_count(offset, "offset", 0)
        more = None if size is None else size + 1
        async with self.db.transaction(readonly=True) as conn:
            entities = await reads.list_entities(conn, user, type=None, query=None,
                                                 as_of=as_of, limit=more, offset=start)
            relations = await reads.list_relations(conn, user, None, type=None, as_of=as_of,
                                                   valid_at=valid_at, limit=more, offset=start)
            follows = size is not None and (len(entities) > size or len(relations) > size)
            entities, relations = entities[:size], relations[:size]
            observations = await reads.list_observations(
                conn, user, None, as_of=as_of, valid_at=valid_at,
                of=None if size is None else {x.id for x in entities})
        return Graph(entities, observations, relations,
                     next_offset=start + size if follows and size is not None else None)
