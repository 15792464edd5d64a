"""The inspector's knowledge-graph pages: a user's entities, and one entity's time line.

The entity page shows its observations and relations with their four timestamps
(valid from / to in the world, recorded / invalidated in the system) and a state
(current, ended, retracted), what caused it and what it led to, each linked to its
entity, and an *as of* field: the page as TrueMem knew it at that instant. It reads
through the core's async graph API (``aentity_timeline`` for the rows of every version).
Read-only: the graph changes through the API, MCP and extraction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from truemem_core import InvalidInputError, NotFoundError, Relation
from truemem_server.routes.deps import Memory
from truemem_server.ui.access import Viewer, storage_id
from truemem_server.ui.render import UiRoute, base, page, path_part, see

router = APIRouter(route_class=UiRoute, include_in_schema=False)
MAX_ENTITIES = 500
CHAIN_DEPTH = 3
RowState = Literal["current", "ended", "not yet", "retracted"]
Moment = Annotated[str, Query(max_length=40)]


def moment(value: str) -> datetime | None:
    """The *as of* field: empty → now (None); a date, or a date and time (UTC unless it
    names its zone)."""
    if not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInputError(
            "as of: give a date, or a date and time, e.g. 2026-03-15T12:00") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def field_value(at: datetime | None) -> str:
    """``at`` as a ``datetime-local`` field shows it (UTC)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") if at is not None else ""


def row_state(valid_from: datetime | None, valid_to: datetime | None,
              invalidated_at: datetime | None, at: datetime) -> RowState:
    """Where a row stands at ``at``: retracted by the system, ended or not yet begun in
    the world, else current."""
    if invalidated_at is not None and invalidated_at <= at:
        return "retracted"
    if valid_to is not None and valid_to <= at:
        return "ended"
    if valid_from is not None and valid_from > at:
        return "not yet"
    return "current"


def entities_url(request: Request, user: str) -> str:
    return f"{base(request)}/users/{path_part(user)}/entities"


@router.get("/users/{user}/entities")
async def entities_page(
    request: Request, user: str, principal: Viewer, memory: Memory,
    q: Annotated[str, Query(max_length=200)] = "",
    type: Annotated[str, Query(max_length=64)] = "", as_of: Moment = "",
) -> Response:
    stored = storage_id(principal, user)
    at = moment(as_of)
    found = await memory.graph.alist_entities(stored, type=type.strip() or None,
                                              query=q.strip() or None, as_of=at, limit=MAX_ENTITIES)
    return page(request, "entities.html", user=user, entities=found, q=q, type=type.strip(),
                as_of=field_value(at), at=at, limited=len(found) == MAX_ENTITIES)


@router.get("/users/{user}/entities/{entity}")
async def entity_page(
    request: Request, user: str, entity: str, principal: Viewer, memory: Memory,
    as_of: Moment = "", retracted: bool = False,
) -> Response:
    stored = storage_id(principal, user)
    at = moment(as_of)
    try:
        found = await memory.graph.aget_entity(stored, entity, as_of=at)
    except NotFoundError:
        return page(request, "error.html", 404, message="no such entity for this user"
                    + (" at that time" if at is not None else ""))
    if found.id != entity:  # named by its name or an alias: its page is at its id
        return see(f"{entities_url(request, user)}/{path_part(found.id)}"
                   + (f"?as_of={field_value(at)}" if at is not None else ""))
    observations, relations = await memory.graph.aentity_timeline(
        stored, found.id, as_of=at, include_retracted=retracted)
    causes = await memory.graph.acauses(stored, found.id, depth=CHAIN_DEPTH, as_of=at)
    effects = await memory.graph.aeffects(stored, found.id, depth=CHAIN_DEPTH, as_of=at)
    return page(request, "entity.html", user=user, entity=found, observations=observations,
                relations=[(r, r.source_id == found.id) for r in relations],
                causes=causes, effects=effects, as_of=field_value(at), at=at,
                now=at or datetime.now(UTC), retracted=retracted, state=row_state,
                other=_other)


def _other(relation: Relation, outgoing: bool) -> tuple[str, str]:
    """The entity at the other end of ``relation``: (id, name)."""
    return ((relation.target_id, relation.target) if outgoing
            else (relation.source_id, relation.source))
