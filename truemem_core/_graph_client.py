"""``memory.graph``: the knowledge graph's calls (``GraphNamespace``).

Every operation is an async one-line delegation to ``GraphService``
(``truemem_core/graph/service.py``), its sync twin derived. Entities are named by
handle: a name (matched case- and space-insensitively, or by alias), or an id.
Time travel: ``as_of=t`` is what TrueMem had recorded at ``t``; ``valid_at=t``
what was true in the world at ``t``. Without them: what is known now about now.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from truemem_core._bridge import sync_twin
from truemem_core._core import Namespace
from truemem_core.graph.records import Entity, Graph, Hop, Observation, Relation
from truemem_core.graph.service import EntityInput, ObservationInput, RelationInput


class GraphNamespace(Namespace):
    """``memory.graph``: entities, their observations and relations, and traversals."""

    # -- writes --------------------------------------------------------------------

    async def aadd_entities(self, user_id: str, entities: Sequence[EntityInput]) -> list[Entity]:
        """Create the entities that do not exist yet (by normalised name and type); new
        aliases are added to existing ones. Items: ``EntitySpec`` or mappings with
        ``name``, ``type`` (or ``entityType``), ``aliases``. Returns one entity per item."""
        return await self._loop.arun(self._core.graph.add_entities(user_id, entities))
    add_entities = sync_twin(aadd_entities)

    async def aadd_observations(
        self, user_id: str, observations: Sequence[ObservationInput]
    ) -> list[Observation]:
        """Record statements about entities (created when missing). Items:
        ``ObservationSpec`` or mappings with ``entity`` (or ``entityName``), ``text``
        (or ``contents``: a list of texts), ``entity_type``, ``confidence``, ``valid_from``.
        A statement already current is not duplicated."""
        return await self._loop.arun(self._core.graph.add_observations(user_id, observations))
    add_observations = sync_twin(aadd_observations)

    async def aadd_relations(
        self, user_id: str, relations: Sequence[RelationInput]
    ) -> list[Relation]:
        """Record ``source --type--> target`` (entities created when missing). Items:
        ``RelationSpec`` or mappings with ``source``/``from``, ``type``/``relationType``,
        ``target``/``to``, and ``confidence``, ``evidence``, ``valid_from``, ``replaces``."""
        return await self._loop.arun(self._core.graph.add_relations(user_id, relations))
    add_relations = sync_twin(aadd_relations)

    async def adelete_entities(self, user_id: str, names: Sequence[str]) -> int:
        """Retract entities with their observations and relations (``as_of`` an earlier
        instant still sees them); unknown names are ignored. Returns how many entities."""
        return await self._loop.arun(self._core.graph.delete_entities(user_id, names))
    delete_entities = sync_twin(adelete_entities)

    async def adelete_observations(self, user_id: str, entity: str, texts: Sequence[str]) -> int:
        """Retract these statements about ``entity``; returns how many rows were retracted."""
        return await self._loop.arun(self._core.graph.delete_observations(user_id, entity, texts))
    delete_observations = sync_twin(adelete_observations)

    async def adelete_relations(self, user_id: str, relations: Sequence[RelationInput]) -> int:
        """Retract these relations; returns how many rows were retracted."""
        return await self._loop.arun(self._core.graph.delete_relations(user_id, relations))
    delete_relations = sync_twin(adelete_relations)

    # -- reads ---------------------------------------------------------------------

    async def aget_entity(
        self, user_id: str, name_or_id: str, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> Entity:
        """The entity by name, alias or id; ``NotFoundError`` when there is none."""
        return await self._loop.arun(self._core.graph.get_entity(
            user_id, name_or_id, as_of=as_of, valid_at=valid_at))
    get_entity = sync_twin(aget_entity)

    async def alist_entities(
        self, user_id: str, *, type: str | None = None, query: str | None = None,
        as_of: datetime | None = None, valid_at: datetime | None = None,
        limit: int | None = None,
    ) -> list[Entity]:
        """The user's entities by name; ``type`` filters, ``query`` keeps those whose
        name, alias, type or observations contain it."""
        return await self._loop.arun(self._core.graph.list_entities(
            user_id, type=type, query=query, as_of=as_of, valid_at=valid_at, limit=limit))
    list_entities = sync_twin(alist_entities)

    async def alist_observations(
        self, user_id: str, entity: str | None = None, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Observation]:
        return await self._loop.arun(self._core.graph.list_observations(
            user_id, entity, as_of=as_of, valid_at=valid_at))
    list_observations = sync_twin(alist_observations)

    async def aentity_timeline(
        self, user_id: str, entity: str, *, as_of: datetime | None = None,
        include_retracted: bool = False,
    ) -> tuple[list[Observation], list[Relation]]:
        """Every version of ``entity``'s observations and relations held ``as_of`` (now when
        None), whatever their world validity, oldest recorded first (500 of each at most);
        with ``include_retracted``, retracted and replaced rows too."""
        return await self._loop.arun(self._core.graph.timeline(
            user_id, entity, as_of=as_of, retracted=include_retracted))
    entity_timeline = sync_twin(aentity_timeline)

    async def alist_relations(
        self, user_id: str, entity: str | None = None, *, type: str | None = None,
        as_of: datetime | None = None, valid_at: datetime | None = None,
    ) -> list[Relation]:
        """Relations (of ``entity``, either end, when given; of ``type`` when given)."""
        return await self._loop.arun(self._core.graph.list_relations(
            user_id, entity, type=type, as_of=as_of, valid_at=valid_at))
    list_relations = sync_twin(alist_relations)

    async def aneighbours(
        self, user_id: str, entity: str, *, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Relation]:
        """The relations of ``entity`` in either direction (``NotFoundError`` if unknown)."""
        return await self._loop.arun(self._core.graph.neighbours(
            user_id, entity, as_of=as_of, valid_at=valid_at))
    neighbours = sync_twin(aneighbours)

    async def acauses(
        self, user_id: str, entity: str, *, depth: int = 3, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Hop]:
        """The causal chain leading to ``entity``, up to ``depth`` hops back, each hop with
        its evidence, nearest first. Only causal types are followed (``CAUSAL_TYPES``)."""
        return await self._loop.arun(self._core.graph.chain(
            user_id, entity, direction="causes", depth=depth, as_of=as_of, valid_at=valid_at))
    causes = sync_twin(acauses)

    async def aeffects(
        self, user_id: str, entity: str, *, depth: int = 3, as_of: datetime | None = None,
        valid_at: datetime | None = None,
    ) -> list[Hop]:
        """The causal chain that follows from ``entity``, up to ``depth`` hops ahead."""
        return await self._loop.arun(self._core.graph.chain(
            user_id, entity, direction="effects", depth=depth, as_of=as_of, valid_at=valid_at))
    effects = sync_twin(aeffects)

    async def apath(
        self, user_id: str, a: str, b: str, *, max_depth: int = 6,
        as_of: datetime | None = None, valid_at: datetime | None = None,
    ) -> list[Relation]:
        """The shortest chain of relations (any type, either direction) from ``a`` to
        ``b``, in order from ``a``; ``[]`` when none within ``max_depth`` hops."""
        return await self._loop.arun(self._core.graph.path(
            user_id, a, b, max_depth=max_depth, as_of=as_of, valid_at=valid_at))
    path = sync_twin(apath)

    async def aget(
        self, user_id: str, *, as_of: datetime | None = None, valid_at: datetime | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> Graph:
        """The user's whole graph: entities, observations and relations. With ``limit``, a
        page: up to ``limit`` of each list from ``offset`` on; ``Graph.next_offset`` is the
        next page's offset (None after the last). Give a fixed ``as_of`` to page through
        one instant while the graph changes."""
        return await self._loop.arun(self._core.graph.graph(
            user_id, as_of=as_of, valid_at=valid_at, limit=limit, offset=offset))
    get = sync_twin(aget)
