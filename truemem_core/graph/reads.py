"""Reads of the graph: the entities a query names, and their current facts."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.records import Entity, Observation, Relation


async def find_entities(
    conn: AsyncConnection, user: str, query: str, *, limit: int
) -> list[Entity]:
    """The user's current entities whose name or alias the query mentions (exact after
    normalisation, alias, or trigram match), best first; one statement."""
    raise NotImplementedError


async def current_facts(
    conn: AsyncConnection, user: str, entity_ids: Collection[str]
) -> tuple[list[Observation], list[Relation]]:
    """The current observations of ``entity_ids`` and their current one-hop relations."""
    raise NotImplementedError
