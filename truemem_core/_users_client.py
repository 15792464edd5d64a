"""``TrueMem``'s list of the store's users (a base class, so that ``TrueMem`` stays
readable): sync with an ``a``-prefixed async twin, each a one-line delegation to
``Users`` (``_users.py``)."""

from __future__ import annotations

from truemem_core._bridge import LoopThread, sync_twin
from truemem_core._core import Core
from truemem_core.records import UserInfo


class _UserList:
    _loop: LoopThread
    _core: Core

    async def alist_users(self, prefix: str = "", *, limit: int = 500) -> list[UserInfo]:
        """Up to ``limit`` of the store's users whose id starts with ``prefix`` (all of
        them by default), by id: each with its memory and session counts and its last
        change. A user exists once it has a memory or a session. Reads every stored id
        once: for an operator's page (the server's user picker), not a request's path."""
        return await self._loop.arun(self._core.users.list_users(prefix, limit))
    list_users = sync_twin(alist_users)
