"""``TrueMemMiddleware``: TrueMem for agents made with LangChain 1.x ``create_agent``.

    agent = create_agent(model, tools, middleware=[TrueMemMiddleware(memory)])
    agent.invoke({"messages": [...]}, context={"user_id": "ana", "session_id": "s1"})

- ``before_model``: before the run's first model call, the context for the user's
  latest message is prepared (this is also where "remember that…" is noticed and
  stored); a run resumed after an interrupt (a human approving a tool call) prepares
  it again, since the run's private state does not survive the pause;
- ``wrap_model_call``: every model call of the run gets it in its system message
  (and the session's recent turns, when the agent keeps no history of its own);
- ``after_agent``: the user's message and the agent's final answer are recorded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult, PrivateStateAttr
from langchain_core.messages import AnyMessage
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.runtime import Runtime

from truemem_core import InvalidInputError, TrueMem

from ._messages import Prompts, context_parts, find_human, last_exchange, with_context


class TrueMemState(AgentState[Any]):
    """The agent state plus this run's TrueMem context (private, never checkpointed)."""

    truemem_prompt: NotRequired[Annotated[Prompts, UntrackedValue, PrivateStateAttr]]
    truemem_recent: NotRequired[Annotated[list[AnyMessage], UntrackedValue, PrivateStateAttr]]


def _lookup(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


class TrueMemMiddleware(AgentMiddleware[TrueMemState, Any, Any]):
    """Agent middleware: TrueMem's context before the model, recording after the run.

    ``user_id`` and ``session_id`` fix whose memory this is; left out, they are
    read from the run's context (``agent.invoke(..., context={"user_id": …,
    "session_id": …})``, a mapping or an object with those attributes).
    """

    state_schema = TrueMemState

    def __init__(
        self, memory: TrueMem, *, user_id: str | None = None, session_id: str | None = None
    ) -> None:
        super().__init__()
        if not isinstance(memory, TrueMem):
            raise InvalidInputError(
                f"TrueMemMiddleware needs a TrueMem as its memory; got {type(memory).__name__}")
        self.memory = memory
        self.user_id = user_id
        self.session_id = session_id

    def _ids(self, runtime: Runtime[Any]) -> tuple[str, str]:
        user = self.user_id if self.user_id is not None else _lookup(runtime.context, "user_id")
        session = (self.session_id if self.session_id is not None
                   else _lookup(runtime.context, "session_id"))
        if user is None or session is None:
            raise InvalidInputError(
                "TrueMemMiddleware needs a user_id and a session_id: pass them to it, or "
                "invoke the agent with context={'user_id': ..., 'session_id': ...}")
        return str(user), str(session)

    @staticmethod
    def _said(state: TrueMemState) -> str | None:
        """The latest user message's text; None without one, or when it has no words
        (an image alone): then the run goes on without TrueMem."""
        messages = state["messages"]
        index = find_human(messages)
        said = None if index is None else str(messages[index].text)
        return said if said and said.strip() else None

    # -- before the run's first model call: prepare the context once -----------------

    def before_model(self, state: TrueMemState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        said = None if "truemem_prompt" in state else self._said(state)
        if said is None:
            return None
        prompt, recent = context_parts(self.memory.get_context(*self._ids(runtime), said))
        return {"truemem_prompt": prompt, "truemem_recent": recent}

    async def abefore_model(
        self, state: TrueMemState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        said = None if "truemem_prompt" in state else self._said(state)
        if said is None:
            return None
        context = await self.memory.aget_context(*self._ids(runtime), said)
        prompt, recent = context_parts(context)
        return {"truemem_prompt": prompt, "truemem_recent": recent}

    # -- every model call: inject it -------------------------------------------------

    @staticmethod
    def _with_context(request: ModelRequest[Any]) -> ModelRequest[Any]:
        state = cast(TrueMemState, request.state)
        if "truemem_prompt" not in state:
            return request
        system, messages = with_context(request.system_message, request.messages,
                                        state["truemem_prompt"], state.get("truemem_recent", []))
        return request.override(system_message=system, messages=cast(list[AnyMessage], messages))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        return handler(self._with_context(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        return await handler(self._with_context(request))

    # -- after the run: record the exchange ----------------------------------------

    @staticmethod
    def _turns(state: TrueMemState) -> list[tuple[str, str]]:
        # Only a run that prepared a context records: one that had a user message to
        # answer (a run resumed after an interrupt prepared it again; the part before
        # the pause recorded nothing).
        return last_exchange(state["messages"]) if "truemem_prompt" in state else []

    def after_agent(self, state: TrueMemState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        turns = self._turns(state)
        if turns:
            self.memory.record_messages(*self._ids(runtime), turns)
        return None

    async def aafter_agent(
        self, state: TrueMemState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        turns = self._turns(state)
        if turns:
            await self.memory.arecord_messages(*self._ids(runtime), turns)
        return None
