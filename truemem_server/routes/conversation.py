"""The two calls (context before the model, record after it) and a session's state."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from truemem_core import SessionState, TrueMem
from truemem_server.auth import Gated, Writer, shown_user, stored_user
from truemem_server.errors import NotFound, documented
from truemem_server.models import (
    ContextOut,
    ContextRequest,
    RecordedOut,
    RecordRequest,
    SessionInfoOut,
    SessionOut,
    SynthesisOut,
)
from truemem_server.routes.deps import Ids, Memory, ReadUser, WriteUser

router = APIRouter(tags=["conversation"], route_class=Gated,
                   responses=documented(401, 403, 404, 413, 422, 500, 503))


@router.post("/context", response_model=ContextOut, summary="Context for the next answer")
async def get_context(body: ContextRequest, principal: Writer, memory: Memory,
                      ids: Ids) -> ContextOut:
    """Summary, recent messages and the facts and past turns that matter for ``message``,
    also rendered as chat ``messages``. Stores explicit "remember that…" requests, so it
    needs a key that may write."""
    user = stored_user(principal, body.user_id)
    return ContextOut.of(await memory.aget_context(user, body.session_id, body.message), ids)


@router.post("/record", response_model=RecordedOut, status_code=201,
             summary="Record an exchange")
async def record(body: RecordRequest, principal: Writer, memory: Memory,
                 ids: Ids) -> RecordedOut:
    """Store the user's message and the answer; extraction runs in the background."""
    user = stored_user(principal, body.user_id)
    return RecordedOut.of(await memory.arecord(
        user, body.session_id, body.user_message, body.assistant_message), ids)


@router.get("/users/{user_id}/sessions", response_model=list[SessionInfoOut],
            summary="A user's sessions")
async def list_sessions(user: ReadUser, memory: Memory) -> list[SessionInfoOut]:
    """Each session's id, message count, first and latest message times and summary,
    the one with the latest message first."""
    return [SessionInfoOut.of(info) for info in await memory.sessions.alist(user)]


@router.get("/users/{user_id}/syntheses", response_model=list[SynthesisOut],
            summary="A user's syntheses")
async def list_syntheses(user: ReadUser, memory: Memory, ids: Ids) -> list[SynthesisOut]:
    """A summary of each stretch of five user messages of each past session, with the
    messages it draws on and the days it spans, the earliest first."""
    return [SynthesisOut.of(item, ids) for item in await memory.syntheses.alist(user)]


@router.get("/users/{user_id}/sessions/{session_id:path}", response_model=SessionOut,
            summary="A session's summary and recent messages")
async def get_session(
    user: ReadUser, session_id: str, memory: Memory, ids: Ids,
    recent: Annotated[int | None, Query(ge=1, le=100_000, description=(
        "how many of its latest messages (default: the recent_messages a context serves)"
    ))] = None,
) -> SessionOut:
    return SessionOut.of(shown_user(user), session_id,
                         await _held(memory, user, session_id, recent), ids)


@router.delete("/users/{user_id}/sessions/{session_id:path}", status_code=204,
               response_class=Response, summary="Clear a session")
async def clear_session(user: WriteUser, session_id: str, memory: Memory) -> Response:
    """Delete the session's messages, summary and synthesis; long-term memories stay."""
    await _held(memory, user, session_id, recent=1)
    await memory.sessions.aclear(user, session_id)
    return Response(status_code=204)


async def _held(memory: TrueMem, user: str, session_id: str, recent: int | None) -> SessionState:
    """The session's state; 404 for a session that holds nothing, neither a message nor
    a summary: one never recorded, or cleared."""
    state = await memory.sessions.aget(user, session_id, recent=recent)
    if not state.recent and state.summary is None:
        raise NotFound("no such session for this user")
    return state
