"""``TrueMemChatMessageHistory``: one TrueMem session as a LangChain chat history."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from truemem_core import TrueMem

from ._messages import history, to_turns


class TrueMemChatMessageHistory(BaseChatMessageHistory):
    """A session's running summary and recent messages; what is added is recorded.

    ``messages`` is the summary (a ``SystemMessage``, once older turns have been
    folded into it) followed by the last recent messages verbatim. Adding messages
    records them in one call, so a human message followed by the AI reply becomes
    one interaction and its facts are extracted in the background. Tool calls and
    tool results are not recorded. Works under ``RunnableWithMessageHistory``.
    """

    def __init__(self, memory: TrueMem, user_id: str, session_id: str) -> None:
        super().__init__()
        self.memory = memory
        self.user_id = user_id
        self.session_id = session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        state = self.memory.get_session(self.user_id, self.session_id)
        return history(state.summary, state.recent)

    async def aget_messages(self) -> list[BaseMessage]:
        state = await self.memory.aget_session(self.user_id, self.session_id)
        return history(state.summary, state.recent)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        turns = to_turns(messages)
        if turns:
            self.memory.record_messages(self.user_id, self.session_id, turns)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        turns = to_turns(messages)
        if turns:
            await self.memory.arecord_messages(self.user_id, self.session_id, turns)

    def clear(self) -> None:
        """Forget this session's messages and summary; long-term memories stay."""
        self.memory.clear_session(self.user_id, self.session_id)

    async def aclear(self) -> None:
        await self.memory.aclear_session(self.user_id, self.session_id)
