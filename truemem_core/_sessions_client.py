"""``memory.sessions`` and ``memory.syntheses``: sessions as they are stored (list them,
read one, forget one) and the syntheses of past sessions.

Every operation is an async one-line delegation to ``Conversation``
(``conversation/service.py``), its sync twin derived.
"""

from __future__ import annotations

from truemem_core._bridge import sync_twin
from truemem_core._core import Namespace
from truemem_core.records import SessionInfo, SessionState, Synthesis


class SessionsNamespace(Namespace):
    """``memory.sessions``: a user's sessions, their summaries and recent messages."""

    async def aget(
        self, user_id: str, session_id: str, *, recent: int | None = None
    ) -> SessionState:
        """A session's running summary and its last ``recent`` messages (by default the
        ``recent_messages`` a context serves; no retrieval)."""
        return await self._loop.arun(self._core.conversation.session(user_id, session_id, recent))
    get = sync_twin(aget)

    async def aclear(self, user_id: str, session_id: str) -> None:
        """Delete a session's messages and summary; long-term memories stay."""
        await self._loop.arun(self._core.conversation.clear_session(user_id, session_id))
    clear = sync_twin(aclear)

    async def alist(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions (id, message count, first and latest message times,
        summary), the one with the latest message first."""
        return await self._loop.arun(self._core.conversation.sessions(user_id))
    # last in the class: below it, ``list`` would name this method, not the builtin
    list = sync_twin(alist)


class SynthesesNamespace(Namespace):
    """``memory.syntheses``: a summary of each stretch of five user messages of each past
    session, with its sources."""

    async def alist(self, user_id: str) -> list[Synthesis]:
        """The user's syntheses (a summary of each stretch of five user messages of each
        past session, with the ids of the messages it draws on and the days it spans),
        the earliest first."""
        return await self._loop.arun(self._core.conversation.syntheses(user_id))
    list = sync_twin(alist)
