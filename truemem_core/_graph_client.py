"""``TrueMem``'s knowledge graph (a base class, so that ``TrueMem`` stays readable).

Every method is sync with an ``a``-prefixed async twin, each a one-line delegation
to ``GraphService`` (``truemem_core/graph/service.py``). Entities are named by
handle: a name (matched case- and space-insensitively, or by alias), or an id.
Time travel: ``as_of=t`` is what TrueMem had recorded at ``t``; ``valid_at=t``
what was true in the world at ``t``. Without them: what is known now about now.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from truemem_core._bridge import LoopThread
from truemem_core._core import Core
from truemem_core.graph.records import Entity, Graph, Hop, Observation, Relation
from truemem_core.graph.service import EntityInput, ObservationInput, RelationInput


class _Graph:
    _loop: LoopThread
    _core: Core

    # -- writes --------------------------------------------------------------------

    def add_entities(self, user_id: str, entities: Sequence[EntityInput]) -> list[Entity]:
        """Create the entities that do not exist yet (by normalised name and type); new
        aliases are added to existing ones. Items: ``EntitySpec`` or mappings with
        ``name``, ``type`` (or ``entityType``), ``aliases``. Returns one entity per item."""
        return self._loop.run(self._core.graph.add_entities(user_id, entities))

    async def aadd_entities(self, user_id: str, entities: Sequence[EntityInput]) -> list[Entity]:
        return await self._loop.arun(self._core.graph.add_entities(user_id, entities))

    def add_observations(
        self, user_id: str, observations: Sequence[ObservationInput]
    ) -> list[Observation]:
        """Record statements about entities (created when missing). Items:
        ``ObservationSpec`` or mappings with ``entity`` (or ``entityName``), ``text``
        (or ``contents``: a list of texts), ``entity_type``, ``confidence``, ``valid_from``.
        A statement already current is not duplicated."""
        return self._loop.run(self._core.graph.add_observations(user_id, observations))

    async def aadd_observations(
        self, user_id: str, observations: Sequence[ObservationInput]
    ) -> list[Observation]:
        return await self._loop.arun(self._core.graph.add_observations(user_id, observations))

    def add_relations(self, user_id: str, relations: Sequence[RelationInput]) -> list[Relation]:
        """Record ``source --type--> target`` (entities created when missing). Items:
        ``RelationSpec`` or mappings with ``source``/``from``, ``type``/``relationType``,
        ``target``/``to``, and ``confidence``, ``evidence``, ``valid_from``, ``replaces``."""
        return self._loop.run(self._core.graph.add_relations(user_id, relations))

    async def aadd_relations(
        self, user_id: str, relations: Sequence[RelationInput]
    ) -> list[Relation]:
        return await self._loop.arun(self._core.graph.add_relations(user_id, relations))

    def delete_entities(self, user_id: str, names: Sequence[str]) -> int:
        """Retract entities with their observations and relations (``as_of`` an earlier
        instant still sees them); unknown names are ignored. Returns how many entities."""
        return self._loop.run(self._core.graph.delete_entities(user_id, names))

    async def adelete_entities(self, user_id: str, names: Sequence[str]) -> int:
        return await self._loop.arun(self._core.graph.delete_entities(user_id, names))

    def delete_observations(self, user_id: str, entity: str, texts: Sequence[str]) -> int:
        """Retract these statements about ``entity``; returns how many rows were retracted."""
        return self._loop.run(self._core.graph.delete_observations(user_id, entity, texts))

    async def adelete_observations(self, user_id: str, entity: str, texts: Sequence[str]) -> int:
        return await self._loop.arun(self._core.graph.delete_observations(user_id, entity, texts))

    def delete_relations(self, user_id: str, relations: Sequence[RelationInput]) -> int:
        """Retract these relations; returns how many rows were retracted."""
        return self._loop.run(self._core.graph.delete_relations(user_id, relations))

    async def adelete_relations(self, user_id: str, relations: Sequence[RelationInput]) -> int:
        return await self._loop.arun(self._core.graph.delete_relations(user_id, relations))

    # -- reads ---------------------------------------------------------------------

    def get_entity(
        self, user_id: str, name_or_id: str, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> Entity:
        """The entity by name, alias or id; ``NotFoundError`` when there is none."""
        return self._loop.run(self._core.graph.get_entity(
            user_id, name_or_id, as_of=as_of, valid_at=valid_at))

    async def aget_entity(
        self, user_id: str, name_or_id: str, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> Entity:
        return await self._loop.arun(self._core.graph.get_entity(
            user_id, name_or_id, as_of=as_of, valid_at=valid_at))

    def list_entities(
        self, user_id: str, *, type: str | None = None, query: str | None = None,
        as_of: datetime | None = None, valid_at: datetime | None = None,
        limit: int | None = None,
    ) -> list[Entity]:
        """The user's entities by name; ``type`` filters, ``query`` keeps those whose
        name, alias, type or observations contain it."""
        return self._loop.run(self._core.graph.list_entities(
            user_id, type=type, query=query, as_of=as_of, valid_at=valid_at, limit=limit))

    async def alist_entities(
        self, user_id: str, *, type: str | None = None, query: str | None = None,
        as_of: datetime | None = None, valid_at: datetime | None = None,
        limit: int | None = None,
    ) -> list[Entity]:
        return await self._loop.arun(self._core.graph.list_entities(
            user_id, type=type, query=query, as_of=as_of, valid_at=valid_at, limit=limit))

    def list_observations(
        self, user_id: str, entity: str | None = None, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Observation]:
        return self._loop.run(self._core.graph.list_observations(
            user_id, entity, as_of=as_of, valid_at=valid_at))

    async def alist_observations(
        self, user_id: str, entity: str | None = None, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Observation]:
        return await self._loop.arun(self._core.graph.list_observations(
            user_id, entity, as_of=as_of, valid_at=valid_at))

    def entity_timeline(
        self, user_id: str, entity: str, *, as_of: datetime | None = None,
        include_retracted: bool = False,
    ) -> tuple[list[Observation], list[Relation]]:
        """Every version of ``entity``'s observations and relations held ``as_of`` (now when
        None), whatever their world validity, oldest recorded first (500 of each at most);
        with ``include_retracted``, retracted and replaced rows too."""
        return self._loop.run(self._core.graph.timeline(
            user_id, entity, as_of=as_of, retracted=include_retracted))

    async def aentity_timeline(
        self, user_id: str, entity: str, *, as_of: datetime | None = None,
        include_retracted: bool = False,
    ) -> tuple[list[Observation], list[Relation]]:
        return await self._loop.arun(self._core.graph.timeline(
            user_id, entity, as_of=as_of, retracted=include_retracted))

    def list_relations(
        self, user_id: str, entity: str | None = None, *, type: str | None = None,
        as_of: datetime | None = None, valid_at: datetime | None = None,
    ) -> list[Relation]:
        """Relations (of ``entity``, either end, when given; of ``type`` when given)."""
        return self._loop.run(self._core.graph.list_relations(
            user_id, entity, type=type, as_of=as_of, valid_at=valid_at))

    async def alist_relations(
        self, user_id: str, entity: str | None = None, *, type: str | None = None,
        as_of: datetime | None = None, valid_at: datetime | None = None,
    ) -> list[Relation]:
        return await self._loop.arun(self._core.graph.list_relations(
            user_id, entity, type=type, as_of=as_of, valid_at=valid_at))

    def neighbours(
        self, user_id: str, entity: str, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Relation]:
        """The relations of ``entity`` in either direction (``NotFoundError`` if unknown)."""
        return self._loop.run(self._core.graph.neighbours(
            user_id, entity, as_of=as_of, valid_at=valid_at))

    async def aneighbours(
        self, user_id: str, entity: str, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Relation]:
        return await self._loop.arun(self._core.graph.neighbours(
            user_id, entity, as_of=as_of, valid_at=valid_at))

    def causes(
        self, user_id: str, entity: str, *, depth: int = 3, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Hop]:
        """The causal chain leading to ``entity``, up to ``depth`` hops back, each hop with
        its evidence, nearest first. Only causal types are followed (``CAUSAL_TYPES``)."""
        return self._loop.run(self._core.graph.chain(
            user_id, entity, direction="causes", depth=depth, as_of=as_of, valid_at=valid_at))

    async def acauses(
        self, user_id: str, entity: str, *, depth: int = 3, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Hop]:
        return await self._loop.arun(self._core.graph.chain(
            user_id, entity, direction="causes", depth=depth, as_of=as_of, valid_at=valid_at))

    def effects(
        self, user_id: str, entity: str, *, depth: int = 3, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Hop]:
        """The causal chain that follows from ``entity``, up to ``depth`` hops ahead."""
        return self._loop.run(self._core.graph.chain(
            user_id, entity, direction="effects", depth=depth, as_of=as_of, valid_at=valid_at))

    async def aeffects(
        self, user_id: str, entity: str, *, depth: int = 3, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Hop]:
        return await self._loop.arun(self._core.graph.chain(
            user_id, entity, direction="effects", depth=depth, as_of=as_of, valid_at=valid_at))

    def path(
        self, user_id: str, a: str, b: str, *, max_depth: int = 6,
        as_of: datetime | None = None, valid_at: datetime | None = None,
    ) -> list[Relation]:
        """The shortest chain of relations (any type, either direction) from ``a`` to
        ``b``, in order from ``a``; ``[]`` when none within ``max_depth`` hops."""
        return self._loop.run(self._core.graph.path(
            user_id, a, b, max_depth=max_depth, as_of=as_of, valid_at=valid_at))

    async def apath(
        self, user_id: str, a: str, b: str, *, max_depth: int = 6,
        as_of: datetime | None = None, valid_at: datetime | None = None,
    ) -> list[Relation]:
        return await self._loop.arun(self._core.graph.path(
            user_id, a, b, max_depth=max_depth, as_of=as_of, valid_at=valid_at))

    def graph(
        self, user_id: str, *, as_of: datetime | None = None, valid_at: datetime | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> Graph:
        """The user's whole graph: entities, observations and relations. With ``limit``, a
        page: up to ``limit`` of each list from ``offset`` on; ``Graph.next_offset`` is the
        next page's offset (None after the last). Give a fixed ``as_of`` to page through
        one instant while the graph changes."""
        return self._loop.run(self._core.graph.graph(
            user_id, as_of=as_of, valid_at=valid_at, limit=limit, offset=offset))

    async def agraph(
        self, user_id: str, *, as_of: datetime | None = None, valid_at: datetime | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> Graph:
        return await self._loop.arun(self._core.graph.graph(
            user_id, as_of=as_of, valid_at=valid_at, limit=limit, offset=offset))
