"""``TrueMemMemory``: TrueMem as the ``memory=`` of LlamaIndex chat engines and agents."""

from __future__ import annotations

import threading
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.memory.types import BaseMemory

from truemem_core import InvalidInputError, TrueMem

from ._messages import chat_message, context_messages, from_messages, summary_message, to_turns


class TrueMemMemory(BaseMemory):
    """One user's session: the context going in, every exchange recorded coming out.

    ``get(input)`` returns a system message with what TrueMem remembers about the
    user that is relevant to ``input`` (and the running summary), then the
    session's recent messages. Engines and agents put the user's message and the
    reply separately: the user's message waits in this object until its reply
    arrives, so that the two are recorded as one interaction and facts are
    extracted from it. Until then ``get`` returns it last (as the model expects)
    and, called without ``input``, retrieves memories for it. Tool calls and tool
    results are not recorded.

    One instance per (user, session); the :class:`TrueMem` store is shared.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: TrueMem = Field(exclude=True, description="The TrueMem store.")
    user_id: str
    session_id: str
    _pending: str | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def class_name(cls) -> str:
        return "TrueMemMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls, memory: TrueMem, user_id: str, session_id: str, **kwargs: Any
    ) -> TrueMemMemory:
        """``TrueMemMemory.from_defaults(TrueMem("memory.db"), "ana", "session-1")``.

        ``ChatMemoryBuffer``'s arguments (``token_limit``, ``chat_history``, ``llm``) are
        refused, not dropped: TrueMem keeps the history, and sizes the context by
        ``Settings.context_token_budget``."""
        if kwargs:
            raise InvalidInputError(
                f"TrueMemMemory.from_defaults takes no {', '.join(sorted(kwargs))}: TrueMem "
                "keeps the history and sizes the context (Settings.context_token_budget)")
        return cls(memory=memory, user_id=user_id, session_id=session_id)

    # -- translation state: the user message waiting for its reply ------------------

    def _take(self, messages: list[ChatMessage]) -> list[tuple[str, str]]:
        """The turns ready to record; a trailing user message waits for its reply."""
        with self._lock:
            turns = [("user", self._pending)] if self._pending else []
            turns += to_turns(messages)
            self._pending = turns.pop()[1] if turns and turns[-1][0] == "user" else None
        return turns

    def _waiting(self) -> list[ChatMessage]:
        pending = self._pending
        return [] if pending is None else [chat_message("user", pending)]

    def _query(self, input: str | None) -> str | None:
        return input if input and input.strip() else self._pending

    # -- get ------------------------------------------------------------------------

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        query = self._query(input)
        if query is None:
            return self.get_all()
        context = self.memory.get_context(self.user_id, self.session_id, query)
        return [*context_messages(context), *self._waiting()]

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        query = self._query(input)
        if query is None:
            return await self.aget_all()
        context = await self.memory.aget_context(self.user_id, self.session_id, query)
        return [*context_messages(context), *self._waiting()]

    def get_all(self) -> list[ChatMessage]:
        """The running summary, the recent messages, and a user message awaiting its reply."""
        state = self.memory.sessions.get(self.user_id, self.session_id)
        return [*summary_message(state.summary), *from_messages(state.recent), *self._waiting()]

    async def aget_all(self) -> list[ChatMessage]:
        state = await self.memory.sessions.aget(self.user_id, self.session_id)
        return [*summary_message(state.summary), *from_messages(state.recent), *self._waiting()]

    # -- put ------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        turns = self._take(messages)
        if turns:
            self.memory.record_messages(self.user_id, self.session_id, turns)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        turns = self._take(messages)
        if turns:
            await self.memory.arecord_messages(self.user_id, self.session_id, turns)

    # -- set / reset ------------------------------------------------------------------

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the session's messages (long-term memories stay)."""
        self.reset()
        self.put_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        await self.areset()
        await self.aput_messages(messages)

    def reset(self) -> None:
        """Forget this session's messages and summary; long-term memories stay."""
        with self._lock:
            self._pending = None
        self.memory.sessions.clear(self.user_id, self.session_id)

    async def areset(self) -> None:
        with self._lock:
            self._pending = None
        await self.memory.sessions.aclear(self.user_id, self.session_id)
