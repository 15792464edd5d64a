"""Finding entities by handle: a name (normalised) or an alias, optionally typed, or an id.

``candidates`` is one statement; ``pick`` (pure) chooses among its rows: the exact
name before an alias, the given type if any. A name without a type that fits
entities of two types is ambiguous (``InvalidInputError``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import is_storable
from truemem_core.errors import InvalidInputError, NotFoundError
from truemem_core.graph.names import norm
from truemem_core.graph.records import Entity
from truemem_core.graph.tables import entity_of, recorded
from truemem_core.storage.schema import graph_entities

e = graph_entities


async def candidates(
    conn: AsyncConnection, user: str, keys: Collection[str], *, as_of: datetime | None = None,
    ids: Collection[str] = (),
) -> list[Entity]:
    """The user's entities (held at ``as_of``) named, aliased or identified by ``keys``."""
    if not keys and not ids:
        return []
    matches = [e.c.norm.in_(sorted(keys)),
               *(e.c.alias_keys.contains(f"|{key}|", autoescape=True) for key in sorted(keys))]
    if ids:
        matches.append(e.c.id.in_(sorted(ids)))
    rows = await conn.execute(select(e).where(e.c.user_id == user, recorded(e, as_of),
                                              or_(*matches)).order_by(e.c.created_at, e.c.id))
    return [entity_of(row) for row in rows]


def _aliases(entity: Entity) -> set[str]:
    return {norm(alias) for alias in entity.aliases}


def pick(found: Iterable[Entity], name: str, kind: str | None) -> Entity | None:
    """The entity ``name`` (of ``kind`` when given) designates among ``found``."""
    key = norm(name)
    found = [entity for entity in found if kind is None or entity.type == kind]
    for matches in ([x for x in found if norm(x.name) == key],
                    [x for x in found if key in _aliases(x)]):
        if len({x.type for x in matches}) > 1:
            types = ", ".join(sorted({x.type for x in matches}))
            raise InvalidInputError(
                f"{name!r} names entities of several types ({types}): give its type")
        if matches:
            return matches[0]
    return None


async def resolve(
    conn: AsyncConnection, user: str, handle: Any, *, as_of: datetime | None = None,
) -> Entity:
    """The entity a handle (id, name or alias) designates; ``NotFoundError`` if none."""
    if not isinstance(handle, str) or not handle.strip() or not is_storable(handle):
        raise InvalidInputError(f"an entity is named by a non-empty str, got {handle!r}")
    found = await candidates(conn, user, {norm(handle)}, as_of=as_of, ids={handle})
    by_id = [entity for entity in found if entity.id == handle]
    entity = by_id[0] if by_id else pick(found, handle, None)
    if entity is None:
        raise NotFoundError(f"no entity {handle!r} for this user")
    return entity
