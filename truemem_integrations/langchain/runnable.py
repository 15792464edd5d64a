"""``with_truemem``: give any chat model (or chain) TrueMem's context, and record its replies.

    chain = prompt | with_truemem(model, memory, user_id="ana", session_id="s1") | parser

Before each call the model gets TrueMem's context (what it remembers about the
user, the running summary, the recent turns); after it, the exchange is recorded
so that facts are learned in the background. The ids can instead come from
``config={"configurable": {"user_id": …, "session_id": …}}`` (one wrapped model
serving many users).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config

from truemem_core import Context, TrueMem

from ._messages import (
    as_messages,
    context_parts,
    exchange,
    last_human,
    reply_text,
    split_system,
    with_context,
)

Output = TypeVar("Output")


class _Turn:
    """One call: the caller's messages split around the latest user message."""

    def __init__(self, value: LanguageModelInput) -> None:
        self.system, self.messages = split_system(as_messages(value))
        self.said = str(self.messages[last_human(self.messages)].text)

    def prompt(self, context: Context) -> list[BaseMessage]:
        system, conversation = with_context(self.system, self.messages, *context_parts(context))
        return [system, *conversation]


class TrueMemRunnable(Runnable[LanguageModelInput, Output]):
    """A runnable that adds TrueMem's context to its input and records the exchange.

    Built by :func:`with_truemem`. Accepts what a chat model accepts (a string, a
    prompt value or messages); returns what the wrapped runnable returns (a
    message, or a string after an output parser). ``stream`` and ``astream``
    stream the wrapped runnable and record once it has finished.
    """

    def __init__(
        self,
        bound: Runnable[LanguageModelInput, Output],
        memory: TrueMem,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> None:
        self.bound = bound
        self.memory = memory
        self.user_id = user_id
        self.session_id = session_id

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        return super().get_name(suffix, name=name or f"TrueMem[{self.bound.get_name()}]")

    def _ids(self, config: RunnableConfig | None) -> tuple[str, str]:
        configurable = ensure_config(config).get("configurable", {})
        user = self.user_id or configurable.get("user_id")
        session = self.session_id or configurable.get("session_id")
        if not user or not session:
            raise ValueError(
                "TrueMem needs a user_id and a session_id: pass them to with_truemem(), or "
                "in config={'configurable': {'user_id': ..., 'session_id': ...}}")
        return str(user), str(session)

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Output:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = self.memory.get_context(user, session, turn.said)
        output = self.bound.invoke(turn.prompt(context), config, **kwargs)
        self.memory.record_messages(user, session, exchange(turn.said, reply_text(output)))
        return output

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Output:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = await self.memory.aget_context(user, session, turn.said)
        output = await self.bound.ainvoke(turn.prompt(context), config, **kwargs)
        await self.memory.arecord_messages(
            user, session, exchange(turn.said, reply_text(output)))
        return output

    def stream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Output]:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = self.memory.get_context(user, session, turn.said)
        parts = []
        for chunk in self.bound.stream(turn.prompt(context), config, **kwargs):
            parts.append(reply_text(chunk))
            yield chunk
        self.memory.record_messages(user, session, exchange(turn.said, "".join(parts)))

    async def astream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Output]:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = await self.memory.aget_context(user, session, turn.said)
        parts = []
        async for chunk in self.bound.astream(turn.prompt(context), config, **kwargs):
            parts.append(reply_text(chunk))
            yield chunk
        await self.memory.arecord_messages(user, session, exchange(turn.said, "".join(parts)))


def with_truemem(
    runnable: Runnable[LanguageModelInput, Output],
    memory: TrueMem,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
) -> TrueMemRunnable[Output]:
    """``runnable`` (a chat model, or a chain that takes messages) with TrueMem's memory.

    ``prompt | model`` becomes ``prompt | with_truemem(model, memory, user_id=…,
    session_id=…)``: the model sees what TrueMem remembers about the user, and
    every exchange is recorded. Without ``user_id``/``session_id`` they are read
    from ``config["configurable"]`` on each call.
    """
    return TrueMemRunnable(runnable, memory, user_id=user_id, session_id=session_id)
