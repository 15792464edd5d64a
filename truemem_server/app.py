"""The FastAPI app: the routes, the error handlers, the limits, the app's ``TrueMem``.

``create_app(memory)`` serves a ``TrueMem`` the caller owns (and closes);
``create_app()`` opens its own from ``database_url`` / ``$TRUEMEM_DATABASE_URL``
and ``$TRUEMEM_REDIS_URL`` when the app starts and closes it when the app stops
(``truemem serve`` runs ``create_app`` as uvicorn's factory in each worker).

The web inspector (``truemem_server.ui``) and MCP over streamable HTTP
(``truemem_server.mcp_server``) are included when their modules are there.
``mount(app)`` may add async context managers to ``app.state.lifespans``: each
is entered at start-up, after the ``TrueMem`` and the key store exist.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI

from truemem_core import TrueMem
from truemem_server import errors
from truemem_server.headers import SafeHeaders
from truemem_server.keys import KeyStore
from truemem_server.limits import BodyLimit, Readable
from truemem_server.message_ids import StoreIds
from truemem_server.routes import health, v1
from truemem_server.settings import ServerSettings

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[Any]]

DESCRIPTION = """Long-term memory for LLM applications, over HTTP.

Every request carries an API key (`Authorization: Bearer tm_…`, from
`truemem keys create`). User ids live in the key's tenant; a key made for one
user acts on that user only; a read-only key cannot write. Errors are
`{"error": {"type": …, "message": …}}`. See docs/server.md."""


def create_app(memory: TrueMem | None = None, *, database_url: str | None = None,
               settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings.from_env()
    pages = settings.api_docs == "pages"
    app = FastAPI(title="TrueMem", version="1", description=DESCRIPTION,
                  lifespan=_lifespan(memory, database_url, settings),
                  openapi_url=None if settings.api_docs == "off" else "/openapi.json",
                  docs_url="/docs" if pages else None, redoc_url="/redoc" if pages else None)
    app.state.settings = settings
    app.state.lifespans = []
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(Readable)
    app.add_middleware(SafeHeaders)
    app.include_router(health.router)
    app.include_router(v1)
    _include_optional(app)
    return app


def _lifespan(memory: TrueMem | None, database_url: str | None,
              settings: ServerSettings) -> Lifespan:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            served = memory
            if served is None:
                served = TrueMem(database_url, settings=settings.memory,
                                 redis_url=settings.redis_url)
                stack.push_async_callback(served.aclose)
            keys = KeyStore(served.admin.database_url, cache_seconds=settings.key_cache_seconds)
            stack.push_async_callback(keys.close)
            app.state.memory, app.state.keys = served, keys
            app.state.message_ids = StoreIds(keys.store)
            for extra in app.state.lifespans:
                await stack.enter_async_context(extra(app))
            yield

    return lifespan


def _include_optional(app: FastAPI) -> None:
    """The inspector at /ui and MCP over HTTP, when their modules are installed."""
    if importlib.util.find_spec("truemem_server.ui") is not None:
        ui = importlib.import_module("truemem_server.ui")
        app.include_router(ui.router, prefix="/ui")
    if importlib.util.find_spec("truemem_server.mcp_server") is not None:
        importlib.import_module("truemem_server.mcp_server").mount(app)
