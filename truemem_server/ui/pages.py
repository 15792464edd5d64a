"""The inspector's pages: sign in, pick a user, their memories, search, one memory, their
conversations, erase.

Every page reads the key from the cookie (``access``); every form also passes the
same-origin check, and a write needs a key that is not read-only. Pages go through
the core's async API, as the JSON routes do.
"""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Query, Request
from starlette.responses import FileResponse, Response

from truemem_core import SessionInfo, SessionState, TrueMem, check_storable
from truemem_server.auth import key_store
from truemem_server.errors import NotFound
from truemem_server.keys import MAX_USER_CHARS
from truemem_server.models import Mode, shown_export
from truemem_server.routes.deps import Memory
from truemem_server.ui.access import (
    Changer,
    Editor,
    Viewer,
    drop_key,
    keep_key,
    same_origin,
    storage_id,
)
from truemem_server.ui.render import HEADERS, HERE, UiRoute, base, page, path_part, see
from truemem_server.ui.users import tenant_users

router = APIRouter(route_class=UiRoute, include_in_schema=False)
NOTICES = {"saved": "Saved.", "deleted": "Memory deleted.", "erased": "User erased.",
           "signed-out": "Signed out.", "forgotten": "Conversation forgotten."}
SHOWN_MESSAGES = 500  # a conversation page shows its latest messages; the export has all
SessionId = Annotated[str, Query(min_length=1, max_length=255)]
Text = Annotated[str, Form(min_length=1, max_length=20_000)]
Importance = Annotated[int, Form(ge=1, le=5)]
SameOrigin = Annotated[None, Depends(same_origin)]


def user_url(request: Request, user: str) -> str:
    return f"{base(request)}/users/{path_part(user)}"


def memory_url(request: Request, user: str, memory_id: str) -> str:
    return f"{user_url(request, user)}/memories/{path_part(memory_id)}"


@router.get("/static/style.css")
async def style() -> Response:
    return FileResponse(HERE / "static" / "style.css", media_type="text/css",
                        headers={"Cache-Control": "max-age=3600"})


@router.get("/login", name="ui_login")
async def login_form(request: Request, done: str = "") -> Response:
    return page(request, "login.html", notice=NOTICES.get(done))


@router.post("/login")
async def login(request: Request, _: SameOrigin,
                key: Annotated[str, Form(max_length=200)] = "") -> Response:
    found = await key_store(request).verify(key.strip()) if key.strip() else None
    if found is None:
        return page(request, "login.html", 401, failed=True)
    response = see(f"{base(request)}/")
    keep_key(response, request, key.strip())
    return response


@router.post("/logout")
async def logout(request: Request, _: SameOrigin) -> Response:
    response = see(f"{request.url_for('ui_login').path}?done=signed-out")
    drop_key(response, request)
    return response


@router.get("/", name="ui_index")
async def index(request: Request, principal: Viewer, memory: Memory, find: str = "",
                done: str = "") -> Response:
    if principal.user is not None:
        return see(user_url(request, principal.user))
    prefix = check_storable(find.strip()[:MAX_USER_CHARS], "the filter")
    users = await tenant_users(memory, principal.tenant, prefix)
    return page(request, "users.html", users=users, find=find, notice=NOTICES.get(done))


@router.get("/open")
async def open_user(request: Request, principal: Viewer, user: str = "") -> Response:
    storage_id(principal, user.strip())  # a bad id or another user's is refused here
    return see(user_url(request, user.strip()))


@router.get("/users/{user}")
async def user_page(
    request: Request, user: str, principal: Viewer, memory: Memory,
    q: Annotated[str, Query(max_length=2000)] = "", mode: Mode = "hybrid",
    archived: bool = False, done: str = "",
) -> Response:
    stored = storage_id(principal, user)
    listed = await memory.alist_memories(stored, include_archived=archived)
    hits = None
    if q.strip():
        hits = await memory.asearch(stored, q, k=10, mode=mode, include_archived=archived)
    return page(request, "user.html", user=user, memories=listed, hits=hits, q=q,
                mode=mode, archived=archived, notice=NOTICES.get(done))


@router.get("/users/{user}/memories/{memory_id}")
async def memory_page(request: Request, user: str, memory_id: str, principal: Viewer,
                      memory: Memory, done: str = "") -> Response:
    stored = storage_id(principal, user)
    found = await memory.aget_memory(stored, memory_id)
    history = await memory.ahistory(stored, memory_id)
    return page(request, "memory.html", user=user, memory=found,
                history=list(reversed(history)), notice=NOTICES.get(done))


@router.post("/users/{user}/memories/{memory_id}")
async def edit_memory(request: Request, user: str, memory_id: str, principal: Editor,
                      memory: Memory, text: Text, importance: Importance) -> Response:
    stored = storage_id(principal, user)
    current = await memory.aget_memory(stored, memory_id)
    new_text = text.strip() if text.strip() != current.text else None
    new_importance = importance if importance != current.importance else None
    if new_text is not None or new_importance is not None:
        await memory.aupdate_memory(stored, memory_id, text=new_text, importance=new_importance)
    return see(f"{memory_url(request, user, memory_id)}?done=saved")


@router.get("/users/{user}/memories/{memory_id}/delete")
async def confirm_delete(request: Request, user: str, memory_id: str, principal: Changer,
                         memory: Memory) -> Response:
    found = await memory.aget_memory(storage_id(principal, user), memory_id)
    return page(request, "delete.html", user=user, memory=found)


@router.post("/users/{user}/memories/{memory_id}/delete")
async def delete_memory(request: Request, user: str, memory_id: str, principal: Editor,
                        memory: Memory) -> Response:
    await memory.adelete_memory(storage_id(principal, user), memory_id)
    return see(f"{user_url(request, user)}?done=deleted")


@router.get("/users/{user}/sessions")
async def sessions_page(request: Request, user: str, principal: Viewer, memory: Memory,
                        done: str = "") -> Response:
    listed = await memory.sessions.alist(storage_id(principal, user))
    return page(request, "sessions.html", user=user, sessions=listed, notice=NOTICES.get(done))


async def _conversation(
    memory: TrueMem, stored: str, session_id: str, recent: int = 1
) -> tuple[SessionInfo, SessionState]:
    """The user's session ``session_id`` and its last ``recent`` messages; an id that is
    none is a 422 page (the read checks it), an unknown one a 404 page. (The id is a
    query parameter: ids may hold "/", which a path segment may not.)"""
    state = await memory.sessions.aget(stored, session_id, recent=recent)
    for info in await memory.sessions.alist(stored):
        if info.session_id == session_id:
            return info, state
    raise NotFound("no such conversation for this user")


@router.get("/users/{user}/conversation")
async def conversation_page(request: Request, user: str, principal: Viewer, memory: Memory,
                            id: SessionId) -> Response:
    stored = storage_id(principal, user)
    info, state = await _conversation(memory, stored, id, recent=SHOWN_MESSAGES)
    syntheses = [item for item in await memory.syntheses.alist(stored)
                 if (item.kind, item.key) == ("session", id)]
    return page(request, "conversation.html", user=user, session_id=id, state=state,
                total=info.messages, syntheses=syntheses)


@router.get("/users/{user}/conversation/forget")
async def confirm_forget(request: Request, user: str, principal: Changer, memory: Memory,
                         id: SessionId) -> Response:
    await _conversation(memory, storage_id(principal, user), id)
    return page(request, "forget.html", user=user, session_id=id)


@router.post("/users/{user}/conversation/forget")
async def forget_conversation(request: Request, user: str, principal: Editor, memory: Memory,
                              id: Annotated[str, Form(min_length=1, max_length=255)]) -> Response:
    stored = storage_id(principal, user)
    await _conversation(memory, stored, id)
    await memory.sessions.aclear(stored, id)
    return see(f"{user_url(request, user)}/sessions?done=forgotten")


@router.get("/users/{user}/export")
async def export_user(user: str, principal: Viewer, memory: Memory,
                      request: Request) -> Response:
    data = shown_export(await memory.aexport_user(storage_id(principal, user)),
                        request.state.message_ids)
    return Response(json.dumps(data, indent=2, ensure_ascii=False), media_type="application/json",
                    headers={**HEADERS, "Content-Disposition": _attachment(user, ".json")})


def _attachment(stem: str, suffix: str) -> str:
    """A download's file name: an ASCII one for old clients (headers are Latin-1) and the
    real one, UTF-8, for the others (RFC 6266)."""
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in stem)
    return (f'attachment; filename="{plain[:80]}{suffix}"; '
            f"filename*=UTF-8''{quote(stem + suffix, safe='')}")


@router.get("/users/{user}/erase")
async def confirm_erase(request: Request, user: str, principal: Changer) -> Response:
    storage_id(principal, user)
    return page(request, "erase.html", user=user)


@router.post("/users/{user}/erase")
async def erase_user(request: Request, user: str, principal: Editor, memory: Memory,
                     typed: Annotated[str, Form(max_length=MAX_USER_CHARS)] = "") -> Response:
    stored = storage_id(principal, user)
    if typed != user:
        return page(request, "erase.html", 422, user=user, mistyped=True)
    await memory.aerase_user(stored)
    if principal.user is not None:
        return see(f"{user_url(request, user)}?done=erased")
    return see(f"{base(request)}/?done=erased")
