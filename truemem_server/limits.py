"""Requests the API cannot read are refused before anything parses them: a body over
the limit (413), a path that is not UTF-8 (422), an API body that is not JSON (415)."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from truemem_server.errors import error_response


class BodyLimit:
    """``max_bytes`` per request body; paths ending in ``/import`` get ``import_bytes``.

    A declared ``Content-Length`` is checked at once (the server holds the client
    to it); a chunked body is read up to the limit and replayed to the app.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int, import_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.import_bytes = import_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        limit = self.import_bytes if path.endswith("/import") else self.max_bytes
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > limit:
                await _too_large(limit)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        body = await _read(receive, limit)
        if body is None:
            await _too_large(limit)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


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
    return error_response(413, "PayloadTooLargeError",
                          f"the request body is over the limit of {limit} bytes")


async def _read(receive: Receive, limit: int) -> list[Message] | None:
    """The request's body messages, or None past ``limit`` bytes."""
    messages, size = [], 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages
        size += len(message.get("body", b""))
        if size > limit:
            return None
        if not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    queue = list(messages)

    async def replayed() -> Message:
        return queue.pop(0) if queue else await receive()

    return replayed
