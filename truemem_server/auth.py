"""Who is calling and what they may touch: keys, tenants and per-user scopes.

Every user id lives in the key's tenant: the API's user ``ana`` of tenant
``acme`` is stored as ``acme/ana``. A tenant name cannot hold ``/``, so the
mapping is one-to-one and two tenants never share a user. A key made for one
user may act on that user only; a read-only key may not write.

The key comes in ``Authorization: Bearer tm_…`` or, for the browser pages, in
the ``truemem_key`` cookie (HttpOnly, SameSite=Strict).

An API route (``Gated``) checks all it can of the caller before its body is read:
the key, the key's scope on the path's user and, for a route that writes, that the
key may write. A request that fails costs its headers only, never a parsed body.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer

from truemem_server import limits
from truemem_server.errors import Forbidden, Unauthorized
from truemem_server.keys import KeyStore, check_user

COOKIE = "truemem_key"
SEPARATOR = "/"

_bearer = HTTPBearer(auto_error=False, scheme_name="apiKey",
                     description="an API key from `truemem keys create`: tm_…")
_cookie = APIKeyCookie(name=COOKIE, auto_error=False, scheme_name="cookieKey",
                       description="the same key in a cookie (the web inspector)")


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: the key's tenant, its one user (None: any user of the tenant)."""

    tenant: str
    user: str | None
    read_only: bool
    key_id: str


def key_store(request: Request) -> KeyStore:
    store: KeyStore = request.app.state.keys
    return store


async def require_principal(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    cookie: Annotated[str | None, Depends(_cookie)],
) -> Principal:
    """The caller of this request (401 without a valid key)."""
    checked: Principal | None = getattr(request.state, "principal", None)
    if checked is not None:  # the route's gate verified this request's key already
        return checked
    key = bearer.credentials if bearer is not None else cookie
    if not key:
        raise Unauthorized("no API key: send 'Authorization: Bearer tm_…'")
    found = await key_store(request).verify(key)
    if found is None:
        raise Unauthorized("unknown or revoked API key")
    principal = Principal(found.tenant, found.user, found.read_only, found.id)
    request.state.principal = principal
    return principal


async def require_writer(
    principal: Annotated[Principal, Depends(require_principal)],
) -> Principal:
    """The caller of a request that writes (403 for a read-only key)."""
    if principal.read_only:
        raise Forbidden("this API key is read-only")
    return principal


def stored_user(principal: Principal, user_id: str) -> str:
    """The storage id of ``user_id`` in the caller's tenant (403 outside the key's user)."""
    user_id = check_user(user_id)
    if principal.user is not None and user_id != principal.user:
        raise Forbidden("this API key may act only on its own user")
    return f"{principal.tenant}{SEPARATOR}{user_id}"


def shown_user(stored: str) -> str:
    """A storage user id as the tenant's caller knows it (without the tenant)."""
    return stored.partition(SEPARATOR)[2]


async def authenticate(request: Request) -> Principal:
    """``require_principal`` outside FastAPI's dependencies: from the headers alone."""
    return await require_principal(request, await _bearer(request), await _cookie(request))


class Gated(APIRoute):
    """An API route that checks its caller before FastAPI reads the body: the key
    (401), that a route depending on ``require_writer`` has a key that may write, and
    the key's scope on the path's ``user_id`` (403). Only then may the body be read, up
    to the ``ServerSettings`` field ``body_setting``."""

    body_setting: ClassVar[str] = "max_body_bytes"

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        writes = require_writer in _calls(self.dependant)
        setting = self.body_setting

        async def gated(request: Request) -> Response:
            principal = await authenticate(request)
            if writes:
                await require_writer(principal)
            user = request.path_params.get("user_id")
            if user is not None:
                stored_user(principal, user)
            limits.allow(request.scope, getattr(request.app.state.settings, setting))
            return await handler(request)

        return gated


class GatedImport(Gated):
    """A route that takes a whole export document: ``max_import_bytes`` of body."""

    body_setting = "max_import_bytes"


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any] | None]:
    for sub in dependant.dependencies:
        yield sub.call
        yield from _calls(sub)


Reader = Annotated[Principal, Depends(require_principal)]
Writer = Annotated[Principal, Depends(require_writer)]
