"""Requests the API cannot read are refused before anything parses them: a body over
the limit (413), a path that is not UTF-8 (422), an API body that is not JSON (415)."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from truemem_server.errors import error_response

_LIMIT = "truemem.body_limit"  # the scope's key of the limit the app may read up to
_CLOSE = (b"connection", b"close")


class TooLarge(HTTPException):
    """A body over its limit, noticed as it is read (the error handlers answer 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the limit of {limit} bytes")
        self.limit = limit


class BodyLimit:
    """Lets the app read at most ``max_bytes`` of a request body; a route may allow
    another amount (``allow``) before it reads the body, once it knows the caller.

    Nothing is read ahead: the limit is checked as the app reads, a declared
    ``Content-Length`` at the first read (so an oversized body is refused unread), a
    chunked body as its parts come. A request answered before its body was read (a 401,
    a 413) is answered with ``Connection: close``: the rest of its body is never read.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        budget = scope[_LIMIT] = [self.max_bytes]  # a list: a route's copy of scope shares it
        headers = dict(scope.get("headers", ()))
        declared = headers.get(b"content-length")
        read, done = 0, declared in (None, b"0") and b"transfer-encoding" not in headers

        async def limited() -> Message:
            nonlocal read, done
            limit = budget[0]
            if declared is not None and (not declared.isdigit() or int(declared) > limit):
                raise TooLarge(limit)
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > limit:
                    raise TooLarge(limit)
                done = not message.get("more_body", False)
            return message

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start" and not done:
                # answered before its body was read (a 401): the rest is not read either
                message = {**message, "headers": [*message.get("headers", ()), _CLOSE]}
            await send(message)

        try:
            await self.app(scope, limited, answer)
        except TooLarge as exc:  # read outside the app's error handlers (no response yet)
            await _too_large(exc.limit)(scope, receive, answer)


def allow(scope: Scope, limit: int) -> None:
    """Let the request of ``scope`` send a body of up to ``limit`` bytes."""
    scope[_LIMIT][0] = limit


class Readable:
    """A path whose escapes are not UTF-8 (``%FF``: decoded, it would be another id's
    U+FFFD) is 422; a body sent to ``/v1/`` as anything but JSON is 415."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = _unreadable(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _unreadable(scope: Scope) -> ASGIApp | None:
    try:
        unquote_to_bytes(scope.get("raw_path") or b"").decode("utf-8")
    except UnicodeDecodeError:
        return error_response(422, "InvalidInputError", "the path is not valid UTF-8")
    headers = dict(scope.get("headers", ()))
    has_body = (headers.get(b"content-length", b"0") not in (b"", b"0")
                or b"transfer-encoding" in headers)
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if (has_body and scope["path"].startswith("/v1/")
            and kind != b"application/json" and not kind.endswith(b"+json")):
        return error_response(415, "UnsupportedMediaTypeError",
                              "send the body as JSON (Content-Type: application/json)")
    return None


def _too_large(limit: int) -> ASGIApp:
    return error_response(413, "PayloadTooLargeError", TooLarge(limit).detail)
