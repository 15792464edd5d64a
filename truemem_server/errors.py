"""Every error the API returns, in one shape and with its status decided in one place.

Bodies read ``{"error": {"type": "InvalidInputError", "message": "…"}}``. A
``TrueMemError`` gets the status of ``STATUS`` (its nearest listed class); the
service's own refusals are ``ApiError``\\ s; an unexpected exception is logged
and answered with a generic 500: never a stack trace, SQL or parameters.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from truemem_core import (
    BrokerError,
    ClosedError,
    DrainTimeoutError,
    EmbedderMismatchError,
    InvalidInputError,
    MissingDependencyError,
    NotFoundError,
    StorageError,
    TrueMemError,
)

log = logging.getLogger("truemem.server")

STATUS: dict[type[TrueMemError], int] = {
    InvalidInputError: 422,
    NotFoundError: 404,
    StorageError: 503,
    BrokerError: 503,
    ClosedError: 503,
    EmbedderMismatchError: 503,
    DrainTimeoutError: 504,
    MissingDependencyError: 500,
    TrueMemError: 500,
}
_HTTP_TYPES = {404: "NotFoundError", 405: "MethodNotAllowedError", 413: "PayloadTooLargeError",
               415: "UnsupportedMediaTypeError"}
MAX_MESSAGE_CHARS = 1000


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class ApiError(Exception):
    """A refusal of the service itself (not of the core): its status, type and message."""

    status: ClassVar[int] = 400
    type: ClassVar[str] = "BadRequestError"
    headers: ClassVar[Mapping[str, str] | None] = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unauthorized(ApiError):
    """No key, or an unknown or revoked one."""

    status = 401
    type = "AuthenticationError"
    headers: ClassVar[Mapping[str, str] | None] = {"WWW-Authenticate": "Bearer"}


class Forbidden(ApiError):
    """A known key acting outside its scope (another user, or a write with a read-only key)."""

    status = 403
    type = "PermissionDeniedError"


class NotFound(ApiError):
    """A page of something that is not there (the inspector's own 404, in its words)."""

    status = 404
    type = "NotFoundError"


def status_for(error: TrueMemError) -> int:
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # type: ignore[index]
    return 500


def capped(message: str) -> str:
    """An error message as a caller gets it: at most ``MAX_MESSAGE_CHARS`` characters
    (it may quote what the caller sent, which may be long)."""
    return message[:MAX_MESSAGE_CHARS]


def problems(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's validation errors, each as ``where: what`` and never with the input."""
    return "; ".join(f"{_where(e.get('loc', ()))}: {e.get('msg', 'invalid')}"
                     for e in errors) or "invalid request"


def error_response(status: int, type_: str, message: str,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    body = {"error": {"type": type_, "message": capped(message)}}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def _shown(request: Request, message: str) -> str:
    """The message as the caller knows its users: without the tenant's storage prefix."""
    principal = getattr(request.state, "principal", None)
    return message.replace(f"{principal.tenant}/", "") if principal is not None else message


async def _core_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TrueMemError)
    status = status_for(exc)
    if status >= 500:
        log.warning("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
    return error_response(status, type(exc).__name__, _shown(request, str(exc)))


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.type, exc.message, exc.headers)


def _where(loc: Any) -> str:
    return ".".join(str(part) for part in loc if part != "body") or "body"


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(422, "InvalidInputError", problems(exc.errors()))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400:  # the only 400 FastAPI raises: a body it could not parse
        return error_response(422, "InvalidInputError", "the body is not valid JSON in UTF-8")
    type_ = _HTTP_TYPES.get(exc.status_code, "HTTPError")
    return error_response(exc.status_code, type_, str(exc.detail), exc.headers)


class CatchAll:
    """The last net: an unexpected exception is logged with its traceback and answered
    with a generic 500 body (when no response has started)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = error_response(
                500, "InternalError", "internal error; the server log has the details")
            await response(scope, receive, send)


def install(app: FastAPI) -> None:
    app.add_exception_handler(TrueMemError, _core_error)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_middleware(CatchAll)


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, all with ``ErrorBody``."""
    return {status: {"model": ErrorBody, "description": _DESCRIPTIONS[status]}
            for status in statuses}


_DESCRIPTIONS = {
    401: "no API key, or an unknown or revoked one",
    403: "the key may not act on this user, or is read-only",
    404: "no such record for this user (or no such path)",
    413: "the request body is over the limit",
    422: "invalid input: nothing was written",
    500: "internal error",
    503: "the database or the broker is unavailable",
    504: "background work did not finish in time",
}
