"""Finding entities by handle: a name (normalised) or an alias, optionally typed, or an id.

``candidates`` reads them in bounded statements; ``pick`` (pure) chooses
among its rows: the exact name before an alias, the given type if any. A name without
a type that fits entities of two types is ambiguous (``InvalidInputError``). ``Known``
indexes a batch's entities by name and alias, so that a batch of n handles picks in
O(n), not O(n²).
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
from truemem_core.graph.tables import CHUNK, chunks, entity_of, recorded
from truemem_core.storage.schema import graph_entities

e = graph_entities


async def candidates(
    conn: AsyncConnection, user: str, keys: Collection[str], *, as_of: datetime | None = None,
    ids: Collection[str] = (),
) -> list[Entity]:
    """The user's entities (held at ``as_of``) named, aliased or identified by ``keys``,
    oldest first. A few keys: one statement, a LIKE per key for the aliases. More: by
    name a chunk at a time, by alias one pass over the user's aliased entities (a LIKE
    per key and row would cost the batch times the store)."""
    wanted = set(keys)
    if len(wanted) <= CHUNK:
        likes = [e.c.alias_keys.contains(f"|{key}|", autoescape=True) for key in sorted(wanted)]
        filters = [or_(e.c.norm.in_(sorted(wanted)), *likes, e.c.id.in_(sorted(ids)))]
    else:
        filters = [*(e.c.norm.in_(part) for part in chunks(sorted(wanted))),
                   e.c.alias_keys != "|", e.c.id.in_(sorted(ids))]
    found: dict[str, Entity] = {}
    for where in filters:
        for row in await conn.execute(select(e).where(e.c.user_id == user, recorded(e, as_of),
                                                      where)):
            if (row.id in ids or row.norm in wanted
                    or not wanted.isdisjoint(row.alias_keys.strip("|").split("|"))):
                found[row.id] = entity_of(row)
    return sorted(found.values(), key=lambda x: (x.created_at, x.id))


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


class Known:
    """Entities by normalised name and alias, in the order they were found; ``put``
    adds one or replaces it (grown aliases) in place."""

    def __init__(self, found: Iterable[Entity] = ()) -> None:
        self.by_id: dict[str, Entity] = {}
        self._keys: dict[str, list[str]] = {}
        self._order: dict[str, int] = {}
        for entity in found:
            self.put(entity)

    def put(self, entity: Entity) -> None:
        self._order.setdefault(entity.id, len(self._order))
        self.by_id[entity.id] = entity
        for key in {norm(entity.name), *_aliases(entity)}:
            ids = self._keys.setdefault(key, [])
            if entity.id not in ids:
                ids.append(entity.id)
                ids.sort(key=self._order.__getitem__)

    def pick(self, name: str, kind: str | None) -> Entity | None:
        """``pick`` among the entities this name or alias fits, without a scan."""
        return pick([self.by_id[i] for i in self._keys.get(norm(name), ())], name, kind)


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
