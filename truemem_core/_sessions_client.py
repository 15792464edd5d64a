"""``TrueMem``'s sessions as they are stored (a base class, so that ``TrueMem`` stays
readable): list them, read one, forget one; list their syntheses. Every method is sync
with an ``a``-prefixed async twin, each a one-line delegation to ``Conversation``
(``conversation/service.py``)."""

from __future__ import annotations

from truemem_core._bridge import LoopThread, sync_twin
from truemem_core._core import Core
from truemem_core.records import SessionInfo, SessionState, Synthesis


class _Sessions:
    _loop: LoopThread
    _core: Core

    async def aget_session(
        self, user_id: str, session_id: str, *, recent: int | None = None
    ) -> SessionState:
        """A session's running summary and its last ``recent`` messages (by default the
        ``recent_messages`` a context serves; no retrieval)."""
        return await self._loop.arun(self._core.conversation.session(user_id, session_id, recent))
    get_session = sync_twin(aget_session)

    async def alist_sessions(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions (id, message count, first and latest message times,
        summary), the one with the latest message first."""
        return await self._loop.arun(self._core.conversation.sessions(user_id))
    list_sessions = sync_twin(alist_sessions)

    async def aclear_session(self, user_id: str, session_id: str) -> None:
        """Delete a session's messages and summary; long-term memories stay."""
        await self._loop.arun(self._core.conversation.clear_session(user_id, session_id))
    clear_session = sync_twin(aclear_session)

    async def alist_syntheses(self, user_id: str) -> list[Synthesis]:
        """The user's syntheses (a summary of each past session, with the ids of the
        messages it draws on and the days it spans), the earliest first."""
        return await self._loop.arun(self._core.conversation.syntheses(user_id))
    list_syntheses = sync_twin(alist_syntheses)
