"""The HTTP API in a test: the real app on a store, called through httpx's ASGI transport.

``open_api(store_url)`` runs the app's lifespan in the test's own event loop (the key
store's connections are bound to it) and yields an ``Api``: the client, the served
``TrueMem`` and a way to make keys. ``rows_of`` reads a store's rows for the checks
that nothing was read or changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import db_access
import httpx
import uvicorn
from fastapi import FastAPI
from sqlalchemy import select

from truemem_core import TrueMem
from truemem_core.storage.schema import memories, memory_events, messages, sessions
from truemem_server.app import create_app
from truemem_server.keys import KeyStore
from truemem_server.settings import ServerSettings


@dataclass
class Api:
    app: FastAPI
    client: httpx.AsyncClient
    memory: TrueMem
    keys: KeyStore

    async def key(self, tenant: str = "acme", *, user: str | None = None,
                  read_only: bool = False) -> dict[str, str]:
        """The headers of a new key."""
        _, secret = await self.keys.create(tenant, user=user, read_only=read_only)
        return {"Authorization": f"Bearer {secret}"}


@contextlib.asynccontextmanager
async def open_api(store_url: str, settings: ServerSettings | None = None
                   ) -> AsyncIterator[Api]:
    async with TrueMem(store_url) as memory:
        app = create_app(memory, settings=settings or ServerSettings())
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=transport, base_url="http://truemem.test") as client:
            yield Api(app, client, memory, app.state.keys)


def rows_of(url: str, user: str | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """What a user (or everyone) has stored: memories, history, sessions, messages.

    Retrieval bookkeeping (counts, last access) is left out: reading may move it."""
    columns = {
        "memories": [memories.c.id, memories.c.user_id, memories.c.text,
                     memories.c.importance, memories.c.state, memories.c.feedback,
                     memories.c.updated_at],
        "memory_events": list(memory_events.c),
        "sessions": [sessions.c.user_id, sessions.c.session_id, sessions.c.summary],
        "messages": [messages.c.id, messages.c.user_id, messages.c.session_id,
                     messages.c.content],
    }
    tables = {"memories": memories, "memory_events": memory_events, "sessions": sessions,
              "messages": messages}
    found = {}
    for name, cols in columns.items():
        query = select(*cols)
        if user is not None:
            query = query.where(tables[name].c.user_id == user)
        found[name] = sorted((tuple(row) for row in db_access.rows(url, query)), key=repr)
    return found


@contextlib.contextmanager
def live_server(app: FastAPI) -> Iterator[str]:
    """``app`` on uvicorn in a thread, on a free loopback port; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def new_key(url: str, tenant: str = "acme", **scope: Any) -> str:
    """A key made on the store at ``url`` from outside the app (as `truemem keys` does)."""

    async def make() -> str:
        store = KeyStore(url)
        try:
            return (await store.create(tenant, **scope))[1]
        finally:
            await store.close()

    return asyncio.run(make())
