"""A user as a whole: export everything, import an export, erase every row."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from truemem_server.auth import Gated, GatedImport, shown_user
from truemem_server.errors import documented
from truemem_server.models import ErasedOut, MemoryOut, shown_export
from truemem_server.routes.deps import Ids, Memory, ReadUser, WriteUser

router = APIRouter(tags=["users"], route_class=Gated,
                   responses=documented(401, 403, 404, 413, 422, 500, 503))


@router.get("/users/{user_id}/export", response_model=dict[str, Any],
            summary="Everything stored about a user, as JSON")
async def export_user(user: ReadUser, memory: Memory, ids: Ids) -> dict[str, Any]:
    """Memories with their history, deleted memories' histories and every session:
    the document ``import`` takes back."""
    return shown_export(await memory.aexport_user(user), ids)


async def import_user(
    user: WriteUser, memory: Memory, ids: Ids,
    data: Annotated[dict[str, Any], Body(description="a document from export")],
) -> list[MemoryOut]:
    return [MemoryOut.of(m, ids) for m in await memory.aimport_user(user, data)]


# the one route whose body may be an export document: max_import_bytes
router.add_api_route("/users/{user_id}/import", import_user, methods=["POST"],
                     response_model=list[MemoryOut], status_code=201,
                     summary="Restore an export under this user",
                     route_class_override=GatedImport)


@router.delete("/users/{user_id}", response_model=ErasedOut, summary="Erase a user")
async def erase_user(user: WriteUser, memory: Memory) -> ErasedOut:
    """Every row of the user goes: memories, history, sessions, messages, jobs."""
    return ErasedOut(user_id=shown_user(user), memories_removed=await memory.aerase_user(user))
