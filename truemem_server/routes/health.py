"""``/healthz``: the process answers. ``/readyz``: it can serve (database reachable,
schema at the newest migration, broker reachable when one is configured).

``/readyz`` opens the store first, as any request would (migrating it once per
process), so that a new version behind a load balancer becomes ready on its own."""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from truemem_core import StorageError, StoreDatabase
from truemem_server.keys import KeyStore

router = APIRouter(tags=["health"])
TIMEOUT_S = 2.0


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str]


@router.get("/healthz", response_model=Health, summary="The process is up")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, summary="Ready to serve",
            responses={503: {"model": Readiness, "description": "not ready"}})
async def readyz(request: Request) -> JSONResponse:
    keys: KeyStore = request.app.state.keys
    redis_url: str | None = request.app.state.settings.redis_url
    checks = {"database": await _database(keys.store)}
    if redis_url:
        checks["broker"] = await _broker(redis_url)
    ready = all(value == "ok" for value in checks.values())
    body = Readiness(status="ready" if ready else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


async def _database(store: StoreDatabase) -> str:
    try:
        await store.check(TIMEOUT_S)  # migrates on first success; at once after that
    except StorageError as exc:  # in words safe to show: what the operator must fix
        return str(exc).removeprefix("database error: ")
    except Exception as exc:  # any failure is an answer here: not ready, and why
        return f"unreachable ({type(exc).__name__})"
    return "ok"


async def _broker(url: str) -> str:
    try:
        import redis.asyncio as aioredis
    except ImportError:
        return "the redis client is not installed: pip install 'truemem[redis]'"
    client = aioredis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_S,
                                     socket_timeout=TIMEOUT_S)
    try:
        async with asyncio.timeout(TIMEOUT_S):
            await client.ping()
    except Exception as exc:  # any failure is an answer here: not ready, and why
        return f"unreachable ({type(exc).__name__})"
    finally:
        await client.aclose()
    return "ok"
