"""A user's long-term memories: list, add, get, change, delete, history, feedback, search.

A memory id of another user (or another tenant) is answered exactly like an
unknown one: 404. The core looks every id up within the caller's user.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from truemem_server.auth import Gated, Reader, stored_user
from truemem_server.errors import documented
from truemem_server.models import (
    FeedbackRequest,
    MemoryChange,
    MemoryEventOut,
    MemoryOut,
    NewMemory,
    ScoredMemoryOut,
    SearchRequest,
)
from truemem_server.routes.deps import Ids, Memory, ReadUser, WriteUser

router = APIRouter(tags=["memories"], route_class=Gated,
                   responses=documented(401, 403, 404, 413, 422, 500, 503))
ONE = "/users/{user_id}/memories/{memory_id}"


@router.get("/users/{user_id}/memories", response_model=list[MemoryOut],
            summary="A user's memories, most important first")
async def list_memories(user: ReadUser, memory: Memory, ids: Ids,
                        include_archived: bool = False) -> list[MemoryOut]:
    found = await memory.alist_memories(user, include_archived=include_archived)
    return [MemoryOut.of(m, ids) for m in found]


@router.post("/users/{user_id}/memories", response_model=MemoryOut, status_code=201,
             summary="Store a fact")
async def add_memory(body: NewMemory, user: WriteUser, memory: Memory, ids: Ids) -> MemoryOut:
    """Stores the fact, or merges it into a near-duplicate (then that memory is returned)."""
    return MemoryOut.of(await memory.aadd_memory(
        user, body.text, importance=body.importance, kind=body.kind, source=body.source), ids)


@router.get(ONE, response_model=MemoryOut, summary="One memory")
async def get_memory(user: ReadUser, memory_id: str, memory: Memory, ids: Ids) -> MemoryOut:
    return MemoryOut.of(await memory.aget_memory(user, memory_id), ids)


@router.patch(ONE, response_model=MemoryOut, summary="Change a memory")
async def update_memory(body: MemoryChange, user: WriteUser, memory_id: str,
                        memory: Memory, ids: Ids) -> MemoryOut:
    return MemoryOut.of(await memory.aupdate_memory(
        user, memory_id, text=body.text, importance=body.importance), ids)


@router.delete(ONE, status_code=204, response_class=Response,
               summary="Delete a memory")
async def delete_memory(user: WriteUser, memory_id: str, memory: Memory) -> Response:
    """Deletes the memory; its text is removed from its history too."""
    await memory.adelete_memory(user, memory_id)
    return Response(status_code=204)


@router.get(f"{ONE}/history", response_model=list[MemoryEventOut],
            summary="A memory's history")
async def history(user: ReadUser, memory_id: str, memory: Memory) -> list[MemoryEventOut]:
    return [MemoryEventOut.of(e) for e in await memory.ahistory(user, memory_id)]


@router.post(f"{ONE}/feedback", response_model=MemoryOut,
             summary="Mark a memory helpful, irrelevant or wrong")
async def feedback(body: FeedbackRequest, user: WriteUser, memory_id: str,
                   memory: Memory, ids: Ids) -> MemoryOut:
    return MemoryOut.of(await memory.afeedback(user, memory_id, body.verdict), ids)


@router.post("/search", response_model=list[ScoredMemoryOut],
             summary="Search a user's memories, each hit explained")
async def search(body: SearchRequest, principal: Reader, memory: Memory,
                 ids: Ids) -> list[ScoredMemoryOut]:
    """Hybrid search (Reciprocal Rank Fusion of vector, trigram and keyword channels) or
    one channel, with filters; each hit has its score and rank in every channel."""
    user = stored_user(principal, body.user_id)
    hits = await memory.asearch(user, body.query, k=body.k, mode=body.mode, **body.filters())
    return [ScoredMemoryOut.of(hit, ids) for hit in hits]
