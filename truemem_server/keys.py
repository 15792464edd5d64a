"""API keys: made, listed, revoked and checked. Only hashes are stored.

A key reads ``tm_<id>_<secret>``: ``id`` (16 hex characters) is public and finds
the row, ``secret`` is 256 random bits. The row keeps the SHA-256 of the whole
key, compared in constant time; a high-entropy key needs no slow hash. Framework-free.
The rows live in the server's own table of the store (``key_table``).

A server's ``KeyStore`` may remember a verified key for ``cache_seconds`` (a lookup
costs a transaction per request otherwise): a key revoked through another process
(``truemem keys revoke``, another server) stops working within that time; revoked
through this store, at once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core import InvalidInputError, NotFoundError, StoreDatabase, check_user_id
from truemem_server.key_table import api_keys, ensure

PREFIX = "tm_"
TENANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_TOKEN = re.compile(r"tm_([0-9a-f]{16})_[A-Za-z0-9_-]{43}")
MAX_USER_CHARS = 191  # the tenant ("<= 63" characters) and "/" fit in the 255 of a user id
_BREAKS = frozenset({"Zl", "Zp"})  # line and paragraph separators: an id is one line
_CACHE_MAX = 10_000


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's row: never its secret."""

    id: str
    tenant: str
    user: str | None
    read_only: bool
    name: str | None
    created_at: datetime
    revoked_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tenant": self.tenant, "user": self.user,
                "read_only": self.read_only, "name": self.name,
                "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


def check_tenant(value: Any) -> str:
    if not isinstance(value, str) or not TENANT.fullmatch(value):
        raise InvalidInputError(
            f"tenant must be 1-63 characters of a-z, 0-9, '_' and '-', starting with a "
            f"letter or digit; got {value!r}")
    return value


def check_user(value: Any) -> str:
    """A user id as the HTTP API takes it: the core's (printable, NFC, no space around
    it, not '.' or '..'), without '/' (the tenant's separator in storage), at most 191
    characters."""
    user = check_user_id(value, MAX_USER_CHARS)
    if "/" in user or any(unicodedata.category(c) in _BREAKS for c in user):
        raise InvalidInputError("user_id must be one line of printable text without '/'")
    return user


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def key_id(key: str) -> str | None:
    """The id of a well-formed key, else None (nothing is looked up for a malformed one)."""
    match = _TOKEN.fullmatch(key)
    return match.group(1) if match else None


def _to_key(row: Row[Any]) -> ApiKey:
    return ApiKey(row.id, row.tenant, row.user_id, row.read_only, row.name, row.created_at,
                  row.revoked_at)


class KeyStore:
    """The ``api_keys`` table of one store, on its own small engine (the caller's loop).

    ``create=False`` refuses a SQLite path that holds no store yet (``StoreDatabase``)."""

    def __init__(self, database_url: str | None = None, *, cache_seconds: float = 0.0,
                 create: bool = True) -> None:
        self.store = StoreDatabase(database_url, create=create)
        self.cache_seconds = cache_seconds
        self._verified: dict[str, tuple[float, ApiKey]] = {}  # key's hash -> (until, row)
        self._table_made = False

    @asynccontextmanager
    async def _transaction(self, *, readonly: bool = False) -> AsyncIterator[AsyncConnection]:
        """A transaction on the store, its key table made first (once a process)."""
        if not self._table_made:
            async with self.store.transaction() as conn:
                await ensure(conn)
            self._table_made = True
        async with self.store.transaction(readonly=readonly) as conn:
            yield conn

    async def create(self, tenant: str, *, user: str | None = None, read_only: bool = False,
                     name: str | None = None) -> tuple[ApiKey, str]:
        """A new key and its text, which is shown this once and never stored."""
        check_tenant(tenant)
        if user is not None:
            user = check_user(user)
        if name is not None and (len(name) > 255 or not name.isprintable()):
            raise InvalidInputError("name must be printable text of at most 255 characters")
        made = ApiKey(secrets.token_hex(8), tenant, user, read_only, name, datetime.now(UTC),
                      None)
        key = f"{PREFIX}{made.id}_{secrets.token_urlsafe(32)}"
        async with self._transaction() as conn:
            await conn.execute(api_keys.insert(), {
                "id": made.id, "secret_hash": hash_key(key), "tenant": tenant, "user_id": user,
                "read_only": read_only, "name": name, "created_at": made.created_at,
                "revoked_at": None})
        return made, key

    async def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        query = select(api_keys).order_by(api_keys.c.tenant, api_keys.c.created_at)
        if tenant is not None:
            query = query.where(api_keys.c.tenant == check_tenant(tenant))
        async with self._transaction(readonly=True) as conn:
            return [_to_key(row) for row in await conn.execute(query)]

    async def revoke(self, key_or_id: str) -> ApiKey:
        """Revoke a key (by id, or by the key itself); revoking twice keeps the first date."""
        wanted = key_id(key_or_id) or key_or_id
        self._verified = {h: hit for h, hit in self._verified.items() if hit[1].id != wanted}
        async with self._transaction() as conn:
            await conn.execute(update(api_keys).where(
                api_keys.c.id == wanted, api_keys.c.revoked_at.is_(None)).values(
                revoked_at=datetime.now(UTC)))
            row = (await conn.execute(select(api_keys).where(api_keys.c.id == wanted))).first()
        if row is None:
            raise NotFoundError(f"no API key {wanted!r}")
        return _to_key(row)

    async def verify(self, key: str) -> ApiKey | None:
        """The key's row if the key is known and not revoked, else None."""
        wanted = key_id(key)
        if wanted is None:
            return None
        digest, now = hash_key(key), time.monotonic()
        cached = self._verified.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self._transaction(readonly=True) as conn:
            row = (await conn.execute(select(api_keys).where(api_keys.c.id == wanted))).first()
        if row is None or not hmac.compare_digest(row.secret_hash, digest):
            return None
        if row.revoked_at is not None:
            return None
        found = _to_key(row)
        if self.cache_seconds > 0:
            if len(self._verified) >= _CACHE_MAX:
                self._verified.clear()
            self._verified[digest] = (now + self.cache_seconds, found)
        return found

    async def close(self) -> None:
        await self.store.close()
