"""The message ids callers of the server see: opaque, so they tell nothing across tenants.

The store numbers messages with one counter (``messages.id``): shown as they are, a
tenant's ids would tell how many messages every other tenant recorded in between. The
server shows each id through a keyed permutation of the integers below 2**52 instead
(a Feistel network whose rounds are BLAKE2b keyed with the store's secret,
``StoreDatabase.secret``): every process serving the store
shows the same id for the same message, two messages never share one, the key cannot
be recovered from ids, and ids stay JSON integers that JavaScript reads exactly
(below 2**53). They are not ordered: the order of messages is the order of the lists
and their ``created_at``. Framework-free.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from truemem_core import StoreDatabase

_HALF = 26  # bits of each half: ids below 2**52
_MASK = (1 << _HALF) - 1
_ROUNDS = 8
_CACHED = 65_536  # ids remembered shown (about 10 MB at most)


class MessageIds:
    """Shows a stored message id (``shown``) and finds it again (``stored``)."""

    def __init__(self, key: bytes) -> None:
        # one keyed hash per round, copied for each value (keying a hash costs more)
        self._rounds = [hashlib.blake2b(bytes([step]), key=key, digest_size=4)
                        for step in range(_ROUNDS)]
        # a session's recent messages are shown again with every context: a few µs each
        self.shown = functools.lru_cache(maxsize=_CACHED)(self._shown)

    def _round(self, step: int, half: int) -> int:
        hashed = self._rounds[step].copy()
        hashed.update(half.to_bytes(4, "big"))
        return int.from_bytes(hashed.digest(), "big") & _MASK

    def _shown(self, stored: int) -> int:
        """The id shown for the message stored as ``stored``."""
        if not 0 <= stored < 1 << 2 * _HALF:  # pragma: no cover - 4.5e15 messages
            raise ValueError(f"message id {stored} is beyond 2**52")
        left, right = stored >> _HALF, stored & _MASK
        for step in range(_ROUNDS):
            left, right = right, left ^ self._round(step, right)
        return (left << _HALF) | right

    def stored(self, shown: int) -> int:
        left, right = shown >> _HALF, shown & _MASK
        for step in reversed(range(_ROUNDS)):
            left, right = right ^ self._round(step, left), left
        return (left << _HALF) | right

    def optional(self, stored: int | None) -> int | None:
        return None if stored is None else self.shown(stored)

    def many(self, stored: Any) -> list[int]:
        return [self.shown(i) for i in stored]

    def job(self, key: str) -> str:
        """A job's key, ``<kind>:<message id>``, with the id shown."""
        kind, _, message = key.partition(":")
        return f"{kind}:{self.shown(int(message))}" if message.isdigit() else key


async def load(store: StoreDatabase) -> MessageIds:
    """The store's permutation (its secret is made when the store is created or upgraded)."""
    return MessageIds(await store.secret())


class StoreIds:
    """A store's ``MessageIds``, read at first use: a server starts (and answers
    ``/readyz``) while its database does not answer yet."""

    def __init__(self, store: StoreDatabase) -> None:
        self._store = store
        self._ids: MessageIds | None = None

    async def get(self) -> MessageIds:
        if self._ids is None:
            self._ids = await load(self._store)
        return self._ids


async def of_store(url: str) -> MessageIds:
    """``load`` on a connection of its own to the store at ``url``."""
    store = StoreDatabase(url)
    try:
        return await load(store)
    finally:
        await store.close()
