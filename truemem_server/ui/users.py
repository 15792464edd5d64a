"""The users of one tenant, for the inspector's user picker (``memory.admin.list_users``).

Every id of tenant ``acme`` is stored as ``acme/…``: the tenant's users are the
store's users whose id starts with ``acme/``, shown without it. Listing reads every
stored id once: fine for a page a person opens, not for a hot path.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime

from truemem_core import TrueMem, UserInfo
from truemem_server.auth import SEPARATOR

MAX_USERS = 500
# Scripts whose letters look alike: "ana" in Latin, "аna" with a Cyrillic "а", "αna"...
_LOOK_ALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})


@dataclass(frozen=True, slots=True)
class TenantUser:
    """A user as the picker lists it: the id in the tenant, counts, the last change."""

    user: str
    memories: int
    sessions: int
    last_change: datetime | None
    warning: str | None = None
    """Why this id may be mistaken for another one (``look_alike``), else None."""


def look_alike(user: str) -> str | None:
    """Why ``user`` may pass for another id in a list, for the operator about to open or
    erase it; None when nothing is suspicious. A heuristic of the standard library's
    character names: letters from two of Latin, Cyrillic and Greek in one id (a whole
    id in one script that happens to look Latin is not caught); ids stored before ids
    were NFC and without surrounding spaces (the API now refuses or normalises them)."""
    by_script: dict[str, list[str]] = {}
    for c in user:
        script = unicodedata.name(c, "").partition(" ")[0]
        if c.isalpha() and script in _LOOK_ALIKE_SCRIPTS:
            by_script.setdefault(script, []).append(c)
    if len(by_script) > 1:
        fewest = min(by_script, key=lambda s: len(by_script[s]))
        return (f"mixes {' and '.join(s.title() for s in sorted(by_script))} letters "
                f"({fewest.title()}: {''.join(by_script[fewest])}), so it may look like "
                "another user's id")
    if user != user.strip():
        return "starts or ends with a space: it looks like the id without it"
    if unicodedata.normalize("NFC", user) != user:
        return "not in Unicode NFC: it looks like the NFC form of the same id"
    return None


def id_prefix(tenant: str, prefix: str = "") -> str:
    """How the storage ids of ``tenant``'s users starting with ``prefix`` begin."""
    return f"{tenant}{SEPARATOR}{prefix}"


def in_tenant(tenant: str, listed: list[UserInfo]) -> list[TenantUser]:
    """The picker's rows of the store's users of ``tenant`` (pure)."""
    cut = len(id_prefix(tenant))
    return [TenantUser(user.user_id[cut:], user.memories, user.sessions, user.last_change,
                       look_alike(user.user_id[cut:])) for user in listed]


async def tenant_users(memory: TrueMem, tenant: str, prefix: str = "") -> list[TenantUser]:
    """Up to ``MAX_USERS`` users of ``tenant`` whose id starts with ``prefix``."""
    listed = await memory.admin.alist_users(id_prefix(tenant, prefix), limit=MAX_USERS)
    return in_tenant(tenant, listed)
