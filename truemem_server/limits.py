"""Request bodies over the limit are refused with 413 before anything parses them."""

from __future__ import annotations

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
