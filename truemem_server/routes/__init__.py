"""The versioned API (``/v1``) and the health checks, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from truemem_server.routes import conversation, health, memories, users

v1 = APIRouter(prefix="/v1")
for module in (conversation, memories, users):
    v1.include_router(module.router)

__all__ = ["health", "v1"]
