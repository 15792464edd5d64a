"""How the inspector answers: Jinja2 pages (autoescaped), strict headers, errors as pages.

``UiRoute`` turns what a page may raise into a page a person reads: no key → the
sign-in form, a refusal or an unknown id → an error page with its status.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, pass_context, select_autoescape
from jinja2.runtime import Context
from starlette.responses import RedirectResponse, Response

from truemem_core import NotFoundError, TrueMemError
from truemem_server.errors import ApiError, status_for
from truemem_server.ui.access import SignIn

HERE = Path(__file__).resolve().parent
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
CHANNELS = {
    "vector": ("meaning", "close in meaning to the query (embedding cosine)"),
    "keyword": ("words", "shares words or their stems with the query (BM25)"),
    "trigram": ("spelling", "spelled like the query's words, typos included (trigrams)"),
    "adjacent": ("nearby", "remembered just before or after a strong match"),
}


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "—"


def path_part(value: str) -> str:
    """A user or memory id as one path segment."""
    return quote(value, safe="")


@pass_context
def message_id(context: Context, stored: int) -> int:
    """A message id as the server shows it (``truemem_server.message_ids``)."""
    return int(context["request"].state.message_ids.shown(stored))


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters.update(when=when, seg=path_part, message_id=message_id)
    env.globals.update(channels=CHANNELS)
    return env


templates = Jinja2Templates(env=_environment())


def base(request: Request) -> str:
    """The inspector's own path (``/ui`` where the app includes it), for links."""
    return request.url_for("ui_index").path.rstrip("/")


def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
    context.setdefault("principal", getattr(request.state, "principal", None))
    context.setdefault("base", base(request))
    return templates.TemplateResponse(request, name, context, status_code=status,
                                      headers=HEADERS)


def see(url: str) -> RedirectResponse:
    """After a form: go to ``url`` (303, so a reload does not send the form again)."""
    return RedirectResponse(url, status_code=303, headers=HEADERS)


def problem(request: Request, error: Exception) -> Response:
    """The page for a refusal or a failure: its status and a sentence, never a trace."""
    if isinstance(error, SignIn):
        return see(request.url_for("ui_login").path)
    if isinstance(error, ApiError):
        return page(request, "error.html", error.status, message=error.message)
    if isinstance(error, RequestValidationError):
        return page(request, "error.html", 422, message="the form was not filled in as "
                    "expected; go back and check it")
    assert isinstance(error, TrueMemError)
    if isinstance(error, NotFoundError):
        return page(request, "error.html", 404, message="no such memory for this user")
    status = status_for(error)
    shown = str(error) if status < 500 else "the memory store is unavailable; try again"
    return page(request, "error.html", status, message=shown)


class UiRoute(APIRoute):
    """A page route whose refusals and failures are pages, not JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(request)
            except (SignIn, ApiError, RequestValidationError, TrueMemError) as error:
                return problem(request, error)

        return handler
