"""``TrueMemChatMessageHistory``: one TrueMem session as a LangChain chat history.

A session's messages are text turns; what a LangChain message carries beyond its text
(tool calls, tool results, ids, metadata) is kept beside them as store items, one per
turn at ``("langchain_history", <session>)`` under the turn's message id: the agent's
steps that led to the turn (``before``), the message itself as LangChain serialises it
(``message``) and the steps after the last turn (``after``). Items are never indexed:
tool traffic is no one's words, so no fact is extracted from it, nor recalled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from truemem_core import Message, TrueMem

from ._messages import from_message, history, message_of, role_of

NAMESPACE = "langchain_history"
_PAGE = 1000


def session_label(session_id: str) -> str:
    """A session id as a namespace label, which holds no ``.``."""
    return session_id.replace("%", "%25").replace(".", "%2E")


class _Plan(NamedTuple):
    turns: list[tuple[str, str]]  # what TrueMem records
    kept: list[dict[str, Any]]  # per turn: the steps before it and the message itself
    trailing: list[dict[str, Any]]  # steps after the last turn


def _plan(messages: Sequence[BaseMessage]) -> _Plan:
    turns, kept, pending = [], [], []
    for message in messages:
        role, text = role_of(message), str(message.text).strip()
        if role is None or not text:  # a step of an agent, or nothing to read
            pending.append(message_to_dict(message))
            continue
        turns.append((role, text))
        kept.append({"before": pending, "message": message_to_dict(message)})
        pending = []
    return _Plan(turns, kept, pending)


def _values(
    plan: _Plan, ids: Sequence[int | None]
) -> tuple[dict[str, dict[str, Any]], set[str], list[dict[str, Any]], str | None]:
    """What to keep beside each stored turn (key -> value), the keys whose value says
    more than the turn's text, the steps left after the last stored turn, and its key."""
    values: dict[str, dict[str, Any]] = {}
    needed: set[str] = set()
    carry: list[dict[str, Any]] = []
    last = None
    for message_id, entry, turn in zip(ids, plan.kept, plan.turns, strict=True):
        if message_id is None:  # skipped by TrueMem (nothing visible): a step like the others
            carry += [*entry["before"], entry["message"]]
            continue
        last = str(message_id)
        values[last] = {"before": carry + entry["before"], "message": entry["message"],
                        "after": []}
        carry = []
        if values[last]["before"] or entry["message"] != _plain(*turn):
            needed.add(last)
    return values, needed, carry + plan.trailing, last


def _plain(role: str, text: str) -> dict[str, Any]:
    """What a turn's text alone gives back, serialised."""
    return message_to_dict(message_of(role, text))


def _messages(found: dict[str, Any] | None, message: Message) -> list[BaseMessage]:
    if found is None:
        return [from_message(message)]
    return messages_from_dict([*found["before"], found["message"], *found["after"]])


def _bare(message: Message) -> dict[str, Any]:
    return {"before": [], "message": _plain(message.role, message.content), "after": []}


def _writes(
    values: dict[str, dict[str, Any]], needed: set[str], after: list[dict[str, Any]],
    last: str | None,
) -> dict[str, dict[str, Any]]:
    """The items to write: those that say more than their turn, and the last turn's
    with the steps after it. Steps with no turn in the session before them are dropped
    (there is nothing to keep them beside)."""
    if after and last is not None:
        values[last]["after"] = [*values[last]["after"], *after]
        needed = needed | {last}
    return {key: values[key] for key in needed}


class TrueMemChatMessageHistory(BaseChatMessageHistory):
    """A session's running summary and recent messages; what is added is recorded.

    ``messages`` is the summary (a ``SystemMessage``, once older turns have been
    folded into it) followed by the last recent messages as they were added: tool
    calls, tool results and each message's ids and metadata come back with them.
    Adding messages records their text turns in one call, so a human message followed
    by the AI reply becomes one interaction and its facts are extracted in the
    background. Works under ``RunnableWithMessageHistory``.
    """

    def __init__(self, memory: TrueMem, user_id: str, session_id: str) -> None:
        super().__init__()
        self.memory = memory
        self.user_id = user_id
        self.session_id = session_id
        self.namespace = (NAMESPACE, session_label(session_id))

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        state = self.memory.sessions.get(self.user_id, self.session_id)
        found = [self.memory.items.get(self.user_id, self.namespace, str(m.id))
                 for m in state.recent]
        return self._assemble(state.summary, state.recent, [f and f.value for f in found])

    async def aget_messages(self) -> list[BaseMessage]:
        state = await self.memory.sessions.aget(self.user_id, self.session_id)
        found = [await self.memory.items.aget(self.user_id, self.namespace, str(m.id))
                 for m in state.recent]
        return self._assemble(state.summary, state.recent, [f and f.value for f in found])

    @staticmethod
    def _assemble(
        summary: str | None, recent: Sequence[Message], found: Sequence[Any]
    ) -> list[BaseMessage]:
        lead = history(summary, [])
        return [*lead, *(m for message, kept in zip(recent, found, strict=True)
                         for m in _messages(kept, message))]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        plan = _plan(messages)
        ids = self.memory.record_messages(self.user_id, self.session_id, plan.turns) \
            if plan.turns else []
        values, needed, after, last = _values(plan, ids)
        if after and last is None:  # steps alone: they follow the session's last turn
            recent = self.memory.sessions.get(self.user_id, self.session_id, recent=1).recent
            if recent:
                last = str(recent[-1].id)
                stored = self.memory.items.get(self.user_id, self.namespace, last)
                values[last] = stored.value if stored else _bare(recent[-1])
        for key, value in _writes(values, needed, after, last).items():
            self.memory.items.put(self.user_id, self.namespace, key, value)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        plan = _plan(messages)
        ids = await self.memory.arecord_messages(self.user_id, self.session_id, plan.turns) \
            if plan.turns else []
        values, needed, after, last = _values(plan, ids)
        if after and last is None:
            state = await self.memory.sessions.aget(self.user_id, self.session_id, recent=1)
            if state.recent:
                last = str(state.recent[-1].id)
                stored = await self.memory.items.aget(self.user_id, self.namespace, last)
                values[last] = stored.value if stored else _bare(state.recent[-1])
        for key, value in _writes(values, needed, after, last).items():
            await self.memory.items.aput(self.user_id, self.namespace, key, value)

    def clear(self) -> None:
        """Forget this session's messages, summary and what was kept beside them;
        long-term memories stay."""
        self.memory.sessions.clear(self.user_id, self.session_id)
        while found := self.memory.items.search(self.namespace, user_id=self.user_id,
                                                limit=_PAGE):
            for item in found:
                self.memory.items.delete(self.user_id, self.namespace, item.key)

    async def aclear(self) -> None:
        await self.memory.sessions.aclear(self.user_id, self.session_id)
        while found := await self.memory.items.asearch(self.namespace, user_id=self.user_id,
                                                       limit=_PAGE):
            for item in found:
                await self.memory.items.adelete(self.user_id, self.namespace, item.key)
