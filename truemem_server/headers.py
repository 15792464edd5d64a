"""Headers every response carries unless it set its own: ``Cache-Control: no-store``
(memories are personal data: no proxy or browser cache keeps them) and
``X-Content-Type-Options: nosniff`` (a JSON body is never taken for a page or a
script). ``/docs`` and ``/redoc``, served only with ``api_docs="pages"``, load their
script and style from a CDN: their Content-Security-Policy allows that CDN and
nothing else, and no frame, form or other connection than to this server."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULTS = ((b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"))
DOCS_PAGES = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})
DOCS_POLICY = (
    b"default-src 'none'; script-src 'unsafe-inline' https://cdn.jsdelivr.net; "
    b"style-src 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    b"font-src https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com "
    b"https://cdn.redoc.ly; connect-src 'self'; worker-src blob:; frame-ancestors 'none'; "
    b"base-uri 'none'; form-action 'none'")


class SafeHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = [(b"content-security-policy", DOCS_POLICY)] if scope["path"] in DOCS_PAGES else []

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in (*DEFAULTS, *extra) if n not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
