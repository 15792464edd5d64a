"""``with_truemem``: give any chat model (or chain) TrueMem's context, and record its replies.

    chain = prompt | with_truemem(model, memory, user_id="ana", session_id="s1") | parser

Before each call the model gets TrueMem's context (what it remembers about the
user, the running summary, the recent turns); after it, the exchange is recorded
so that facts are learned in the background. The ids can instead come from
``config={"configurable": {"user_id": …, "session_id": …}}`` (one wrapped model
serving many users).

``with_truemem(model, …).bind_tools(tools)`` and ``.with_structured_output(schema)``
bind the wrapped chat model and keep the memory around the result. In a tool loop
the user's message is recorded once, by the call that answers it with tool calls;
tool calls and results are not recorded, and the final answer is recorded by the
call that gives it. A structured output is recorded as its JSON.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, BaseMessageChunk
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from pydantic import BaseModel

from truemem_core import Context, InvalidInputError, TrueMem

from ._messages import (
    as_messages,
    calls_tools,
    context_parts,
    last_human,
    reply_text,
    role_of,
    split_system,
    with_context,
)

Output = TypeVar("Output")
Bound = TypeVar("Bound")


class _Turn:
    """One call: the caller's messages split around the latest user message."""

    def __init__(self, value: LanguageModelInput) -> None:
        self.system, self.messages = split_system(as_messages(value))
        index = last_human(self.messages)
        self.said = str(self.messages[index].text)
        # an image without words: nothing to look up or to record; the model answers alone
        self.silent = not self.said.strip()
        # Tool calls or results after it: this call continues a tool loop, and the
        # call that answered the user's message with tool calls recorded that message.
        self.continues = any(role_of(m) is None for m in self.messages[index + 1:])

    def prompt(self, context: Context | None) -> list[BaseMessage]:
        if context is None:
            return [*([self.system] if self.system else []), *self.messages]
        prompts, recent = context_parts(context)
        answering = bool(recent) and role_of(recent[-1]) == "user" and (
            str(recent[-1].text) == self.said)
        if self.continues and answering:
            recent = recent[:-1]  # the message being answered: it is in the input already
        system, conversation = with_context(self.system, self.messages, prompts, recent)
        return [system, *conversation]

    def turns(self, output: Any) -> list[tuple[str, str]]:
        """What to record for the model's ``output``: the user's message (unless already
        recorded) and the reply (unless it only calls tools, or has no text)."""
        if self.silent:
            return []
        reply = "" if calls_tools(output) else reply_text(output)
        asked = [] if self.continues else [("user", self.said)]
        return [*asked, *([("assistant", reply)] if reply.strip() else [])]


def _gather(total: Any, chunk: Any) -> Any:
    """A streamed output so far: message chunks and strings add up; a structured
    output is streamed whole each time (its last value is the answer)."""
    if total is None:
        return chunk
    if isinstance(total, BaseMessageChunk) and isinstance(chunk, BaseMessageChunk):
        return total + chunk
    if isinstance(total, str) and isinstance(chunk, str):
        return total + chunk
    return chunk


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
        if not isinstance(bound, Runnable):
            raise InvalidInputError(
                "with_truemem wraps a LangChain chat model or runnable; "
                f"got {type(bound).__name__}")
        if not isinstance(memory, TrueMem):
            raise InvalidInputError(
                f"with_truemem needs a TrueMem as its memory; got {type(memory).__name__}")
        self.bound = bound
        self.memory = memory
        self.user_id = user_id
        self.session_id = session_id

    # -- the wrapped model, bound: the memory stays around the result ---------------

    def _rewrap(self, bound: Runnable[LanguageModelInput, Bound]) -> TrueMemRunnable[Bound]:
        return TrueMemRunnable(bound, self.memory, user_id=self.user_id,
                               session_id=self.session_id)

    def _model_method(self, name: str) -> Callable[..., Any]:
        method: Callable[..., Any] | None = getattr(self.bound, name, None)
        if not callable(method):
            raise InvalidInputError(
                f"with_truemem(...).{name}() needs the wrapped runnable to be a chat model; "
                f"{self.bound.get_name()} has no {name}(). Call it on the model first, "
                f"then wrap the result: with_truemem(model.{name}(...), memory, ...)")
        return method

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> TrueMemRunnable[AIMessage]:
        """The wrapped chat model with ``tools`` bound (its ``bind_tools``), with memory."""
        return self._rewrap(self._model_method("bind_tools")(tools, **kwargs))

    def with_structured_output(
        self, schema: dict[str, Any] | type, **kwargs: Any
    ) -> TrueMemRunnable[dict[str, Any] | BaseModel]:
        """The wrapped chat model's ``with_structured_output(schema)``, with memory.

        The exchange is recorded with the structured answer as its JSON.
        """
        return self._rewrap(self._model_method("with_structured_output")(schema, **kwargs))

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        return super().get_name(suffix, name=name or f"TrueMem[{self.bound.get_name()}]")

    def _ids(self, config: RunnableConfig | None) -> tuple[str, str]:
        configurable = ensure_config(config).get("configurable", {})
        user = self.user_id if self.user_id is not None else configurable.get("user_id")
        session = (self.session_id if self.session_id is not None
                   else configurable.get("session_id"))
        if user is None or session is None:
            raise InvalidInputError(
                "TrueMem needs a user_id and a session_id: pass them to with_truemem(), or "
                "in config={'configurable': {'user_id': ..., 'session_id': ...}}")
        return str(user), str(session)

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Output:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = None if turn.silent else self.memory.get_context(user, session, turn.said)
        output = self.bound.invoke(turn.prompt(context), config, **kwargs)
        self._record(user, session, turn.turns(output))
        return output

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Output:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = None if turn.silent else await self.memory.aget_context(
            user, session, turn.said)
        output = await self.bound.ainvoke(turn.prompt(context), config, **kwargs)
        await self._arecord(user, session, turn.turns(output))
        return output

    def stream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Output]:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = None if turn.silent else self.memory.get_context(user, session, turn.said)
        total = None
        for chunk in self.bound.stream(turn.prompt(context), config, **kwargs):
            total = _gather(total, chunk)
            yield chunk
        self._record(user, session, turn.turns("" if total is None else total))

    async def astream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Output]:
        user, session = self._ids(config)
        turn = _Turn(input)
        context = None if turn.silent else await self.memory.aget_context(
            user, session, turn.said)
        total = None
        async for chunk in self.bound.astream(turn.prompt(context), config, **kwargs):
            total = _gather(total, chunk)
            yield chunk
        await self._arecord(user, session, turn.turns("" if total is None else total))

    def _record(self, user: str, session: str, turns: list[tuple[str, str]]) -> None:
        if turns:
            self.memory.record_messages(user, session, turns)

    async def _arecord(self, user: str, session: str, turns: list[tuple[str, str]]) -> None:
        if turns:
            await self.memory.arecord_messages(user, session, turns)


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
