"""The service's own settings (the core's are ``truemem_core.Settings``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from truemem_core import InvalidInputError, Settings

ApiDocs = Literal["off", "schema", "pages"]
API_DOCS: tuple[ApiDocs, ...] = ("off", "schema", "pages")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``redis_url``: the broker ``/readyz`` checks and the app's own ``TrueMem`` uses
    (default ``$TRUEMEM_REDIS_URL``). ``memory``: the core's settings for that
    ``TrueMem``. A request body over ``max_body_bytes`` (``max_import_bytes`` for a
    user import) is refused with 413 before it is parsed, and only once the key has
    been checked. ``api_docs``: ``schema`` serves ``/openapi.json``, ``pages`` also
    ``/docs`` and ``/redoc`` (they load their script from a CDN), ``off`` none of them.
    A verified key is remembered for ``key_cache_seconds``: a key revoked from another
    process stops working within that time (0: every request looks its key up)."""

    redis_url: str | None = None
    memory: Settings | None = None
    max_body_bytes: int = 4 * 1024 * 1024
    max_import_bytes: int = 64 * 1024 * 1024
    api_docs: ApiDocs = "schema"
    key_cache_seconds: float = 2.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerSettings:
        """``$TRUEMEM_REDIS_URL``, ``$TRUEMEM_MAX_BODY_BYTES``, ``$TRUEMEM_MAX_IMPORT_BYTES``
        and ``$TRUEMEM_API_DOCS`` over the defaults (``truemem serve`` sets them from its
        flags for its worker processes)."""
        env = os.environ if environ is None else environ
        defaults = cls()
        return cls(
            redis_url=env.get("TRUEMEM_REDIS_URL") or None,
            max_body_bytes=byte_count(env.get("TRUEMEM_MAX_BODY_BYTES"),
                                      "TRUEMEM_MAX_BODY_BYTES", defaults.max_body_bytes),
            max_import_bytes=byte_count(env.get("TRUEMEM_MAX_IMPORT_BYTES"),
                                        "TRUEMEM_MAX_IMPORT_BYTES", defaults.max_import_bytes),
            api_docs=api_docs(env.get("TRUEMEM_API_DOCS") or defaults.api_docs,
                              "TRUEMEM_API_DOCS"))


def byte_count(raw: str | int | None, what: str, default: int) -> int:
    """A body limit: a positive number of bytes (``default`` when not given)."""
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidInputError(f"{what} must be a positive number of bytes, got {raw!r}")
    return value


def api_docs(raw: str, what: str) -> ApiDocs:
    if raw not in API_DOCS:
        raise InvalidInputError(f"{what} must be one of {', '.join(API_DOCS)}; got {raw!r}")
    return raw
