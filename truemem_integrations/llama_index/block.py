"""``TrueMemMemoryBlock``: TrueMem's long-term memories inside LlamaIndex's ``Memory``."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.memory.memory import BaseMemoryBlock

from truemem_core import TrueMem, fact_line

from ._messages import latest_user_text, to_turns


class TrueMemMemoryBlock(BaseMemoryBlock[str]):
    """A memory block for ``llama_index.core.memory.Memory.from_defaults(memory_blocks=[…])``.

    Reading it returns what TrueMem remembers about the user that is relevant to
    the latest user message (one fact per line). Messages that ``Memory`` flushes
    out of its short-term queue are recorded in TrueMem (session ``session_id``,
    else the ``Memory``'s own session), and facts are learned from them in the
    background. ``search_kwargs`` are passed to :meth:`TrueMem.search`.
    """

    name: str = Field(default="truemem", description="The block's name in the prompt.")
    memory: TrueMem = Field(exclude=True, description="The TrueMem store.")
    user_id: str
    session_id: str | None = None
    k: int | None = Field(default=None, description="How many memories (default: search_k).")
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    async def _aget(
        self, messages: list[ChatMessage] | None = None, **block_kwargs: Any
    ) -> str:
        query = latest_user_text(messages or [])
        if not query:
            return ""
        hits = await self.memory.asearch(
            self.user_id, query, **{"k": self.k, **self.search_kwargs})
        return "\n".join(fact_line(hit.memory) for hit in hits)  # as the system prompt has it

    async def aput(
        self,
        messages: list[ChatMessage],
        from_short_term_memory: bool = False,
        session_id: str | None = None,
    ) -> None:
        # Overridden so that the caller's messages are not tagged (mutated) with the session.
        if from_short_term_memory and not self.accept_short_term_memory:
            return
        await self._record(messages, session_id)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await self._record(messages, None)

    async def _record(self, messages: list[ChatMessage], session_id: str | None) -> None:
        turns = to_turns(messages)
        if turns:
            session = self.session_id or session_id or "llama-index"
            await self.memory.arecord_messages(self.user_id, session, turns)
