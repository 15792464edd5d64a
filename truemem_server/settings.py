"""The service's own settings (the core's are ``truemem_core.Settings``)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from truemem_core import Settings


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``redis_url``: the broker ``/readyz`` checks and the app's own ``TrueMem`` uses
    (default ``$TRUEMEM_REDIS_URL``). ``memory``: the core's settings for that
    ``TrueMem``. Bodies over ``max_body_bytes`` (``max_import_bytes`` for a user
    import) are refused with 413 before they are parsed. A verified key is remembered
    for ``key_cache_seconds``: a key revoked from another process stops working within
    that time (0: every request looks its key up)."""

    redis_url: str | None = None
    memory: Settings | None = None
    max_body_bytes: int = 4 * 1024 * 1024
    max_import_bytes: int = 64 * 1024 * 1024
    key_cache_seconds: float = 2.0

    @classmethod
    def from_env(cls) -> ServerSettings:
        return cls(redis_url=os.environ.get("TRUEMEM_REDIS_URL") or None)
