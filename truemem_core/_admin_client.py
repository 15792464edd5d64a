"""``memory.admin``: an operator's calls (``AdminNamespace``): the store's users, the
background maintenance run by hand, re-embedding after a model switch, serving jobs.

Every operation is an async one-line delegation to a service of the core, its sync
twin derived (``serve_jobs``, which runs until interrupted, is sync only).
"""

from __future__ import annotations

from collections.abc import Callable

from truemem_core._bridge import sync_twin
from truemem_core._core import Namespace
from truemem_core.records import UserInfo


class AdminNamespace(Namespace):
    """``memory.admin``: what an operator runs, not a request's path."""

    @property
    def database_url(self) -> str:
        """The store's URL, as resolved (a SQLite path becomes a ``sqlite:///`` URL)."""
        return self._core.url

    async def alist_users(self, prefix: str = "", *, limit: int = 500) -> list[UserInfo]:
        """Up to ``limit`` of the store's users whose id starts with ``prefix`` (all of
        them by default), by id: each with its memory and session counts and its last
        change. A user exists once it has a memory or a session. Reads every stored id
        once: for an operator's page (the server's user picker), not a request's path."""
        return await self._loop.arun(self._core.users.list_users(prefix, limit))
    list_users = sync_twin(alist_users)

    async def amaintain(self, user_id: str) -> dict[str, str]:
        """Recompute the user's dynamic scores and lifecycle states, then prune.

        Runs in the background after every recorded exchange; returns
        ``{memory_id: new_state}`` for the memories that changed state.
        """
        return await self._loop.arun(self._core.memories.maintain(user_id))
    maintain = sync_twin(amaintain)

    async def aprune(self, user_id: str) -> list[str]:
        """Archive the user's least useful memories over the soft limit; their ids."""
        return await self._loop.arun(self._core.memories.prune(user_id))
    prune = sync_twin(aprune)

    async def areembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every vector with this instance's embedder; returns how many.

        The way out of ``EmbedderMismatchError`` after switching embedding models.
        """
        return await self._loop.arun(self._core.reembed(progress))
    reembed = sync_twin(areembed)

    def serve_jobs(self, threads: int = 2) -> None:
        """Run background jobs from the broker in this process until interrupted."""
        self._loop.run(self._core.jobs.serve(threads))
