"""The users of one tenant, for the inspector's user picker: one grouped read per table.

A user exists in storage as soon as it has a memory or a session; the core keeps no
list of users, so the picker reads the two tables the user ids live in. Every id of
tenant ``acme`` is stored as ``acme/…``: the tenant's rows are those whose id starts
with ``acme/``, tested with ``substr`` (exact under any collation, no ``LIKE``
wildcards to escape). That test reads every row's id: the picker costs one scan of
each table, which is fine for a page a person opens, not for a hot path.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from truemem_core.storage.database import Database
from truemem_core.storage.schema import memories, sessions
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


def merge(tenant: str, memory_rows: list[tuple[str, int, datetime | None]],
          session_rows: list[tuple[str, int, datetime | None]]) -> list[TenantUser]:
    """One line per user, by id (pure: the two grouped reads in, the picker's rows out)."""
    users: dict[str, TenantUser] = {}
    cut = len(tenant) + len(SEPARATOR)
    for stored, count, changed in memory_rows:
        users[stored] = TenantUser(stored[cut:], count, 0, changed, look_alike(stored[cut:]))
    for stored, count, changed in session_rows:
        seen = users.get(stored, TenantUser(stored[cut:], 0, 0, None, look_alike(stored[cut:])))
        last = max((t for t in (seen.last_change, changed) if t is not None), default=None)
        users[stored] = TenantUser(seen.user, seen.memories, count, last, seen.warning)
    return [users[key] for key in sorted(users)][:MAX_USERS]


async def tenant_users(db: Database, tenant: str, prefix: str = "") -> list[TenantUser]:
    """Up to ``MAX_USERS`` users of ``tenant`` whose id starts with ``prefix``."""
    start = id_prefix(tenant, prefix)
    reads = []
    for table in (memories, sessions):
        reads.append(
            select(table.c.user_id, func.count(), func.max(table.c.updated_at))
            .where(func.substr(table.c.user_id, 1, len(start)) == start)
            .group_by(table.c.user_id).order_by(table.c.user_id).limit(MAX_USERS))
    async with db.transaction(readonly=True) as conn:
        found = [[(row[0], int(row[1]), row[2]) for row in await conn.execute(query)]
                 for query in reads]
    return merge(tenant, found[0], found[1])
