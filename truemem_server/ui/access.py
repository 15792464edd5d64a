"""Who is signed in to the inspector, and the checks every page and form passes.

The key lives in the ``truemem_key`` cookie: HttpOnly (no script reads it),
SameSite=Strict (no other site's page sends it), Path=/ui (the JSON API never
receives it from a browser), Secure over HTTPS. Every POST must also come from
this origin (``Origin``, else ``Referer``, naming this host): a second guard
against cross-site forms if the cookie rules are ever weakened.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from starlette.responses import Response

from truemem_server.auth import COOKIE, Principal, key_store, stored_user
from truemem_server.errors import Forbidden
from truemem_server.routes.deps import message_ids_of

PATH = "/ui"
MAX_AGE = 12 * 60 * 60


class SignIn(Exception):
    """No valid key in the cookie: the page answers with the sign-in form."""


async def signed_in(request: Request) -> Principal:
    key = request.cookies.get(COOKIE)
    found = await key_store(request).verify(key) if key else None
    if found is None:
        raise SignIn
    principal = Principal(found.tenant, found.user, found.read_only, found.id)
    request.state.principal = principal
    request.state.message_ids = await message_ids_of(request)  # for the pages' message ids
    return principal


def same_origin(request: Request) -> None:
    """Refuse a POST whose ``Origin`` (or ``Referer``) is not this host."""
    claimed = request.headers.get("origin") or request.headers.get("referer")
    host = request.headers.get("host")
    if not claimed or claimed == "null" or urlsplit(claimed).netloc != host:
        raise Forbidden("this form must be sent from the inspector's own pages")


async def may_change(principal: Annotated[Principal, Depends(signed_in)]) -> Principal:
    if principal.read_only:
        raise Forbidden("this key is read-only: it can look, not change")
    return principal


async def writer(principal: Annotated[Principal, Depends(may_change)],
                 _: Annotated[None, Depends(same_origin)]) -> Principal:
    return principal


Viewer = Annotated[Principal, Depends(signed_in)]
Changer = Annotated[Principal, Depends(may_change)]  # a page whose form changes something
Editor = Annotated[Principal, Depends(writer)]  # that form, sent


def storage_id(principal: Principal, user: str) -> str:
    """The storage id of a user the page names (403 outside the key's scope)."""
    return stored_user(principal, user)


def keep_key(response: Response, request: Request, key: str) -> None:
    response.set_cookie(COOKIE, key, max_age=MAX_AGE, path=PATH, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


def drop_key(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
