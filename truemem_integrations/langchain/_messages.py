"""LangChain messages <-> TrueMem's ``(role, text)`` turns and ``Context`` (pure, no I/O)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue
from pydantic import BaseModel

from truemem_core import Context, InvalidInputError, Message

_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
          "system": "system"}


def role_of(message: BaseMessage) -> str | None:
    """TrueMem's role for a message, or None for what it does not store (tools, tool calls)."""
    if isinstance(message, AIMessage) and message.tool_calls:
        return None  # an intermediate step of an agent, not a reply to the user
    kind = message.role if isinstance(message, ChatMessage) else message.type
    return _ROLES.get(kind)


def to_turns(messages: Iterable[BaseMessage]) -> list[tuple[str, str]]:
    """The ``(role, text)`` turns TrueMem records: text only, no tool traffic, no empties."""
    turns = []
    for message in messages:
        role, text = role_of(message), str(message.text).strip()
        if role is not None and text:
            turns.append((role, text))
    return turns


def from_message(message: Message) -> BaseMessage:
    return message_of(message.role, message.content)


def message_of(role: str, text: str) -> BaseMessage:
    """The LangChain message of a TrueMem turn."""
    if role == "user":
        return HumanMessage(text)
    if role == "assistant":
        return AIMessage(text)
    return SystemMessage(text)


def history(summary: str | None, recent: Sequence[Message]) -> list[BaseMessage]:
    """The running summary (as a system message, when there is one), then the recent turns."""
    lead: list[BaseMessage] = [] if summary is None else [
        SystemMessage(f"Summary of the earlier conversation:\n{summary}")]
    return [*lead, *(from_message(m) for m in recent)]


def as_messages(value: Any) -> list[BaseMessage]:
    """A chat model's input (string, prompt value or message-likes) as messages."""
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, Mapping):  # a prompt's variables: its messages would be the keys
        raise InvalidInputError(
            "with_truemem takes what a chat model takes, not a prompt's variables "
            f"({', '.join(map(str, value))}): put the prompt first, "
            "prompt | with_truemem(model, ...)")
    try:
        return convert_to_messages(value)
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise InvalidInputError(
            "with_truemem takes what a chat model takes: a string, a prompt value or a list "
            f"of messages; got {type(value).__name__} ({exc})") from exc


def find_human(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the latest user message, or None."""
    for index in range(len(messages) - 1, -1, -1):
        if role_of(messages[index]) == "user":
            return index
    return None


def last_human(messages: Sequence[BaseMessage]) -> int:
    """Index of the latest user message; a prompt without one has nothing to remember."""
    index = find_human(messages)
    if index is None:
        raise InvalidInputError(
            "TrueMem needs a user (human) message in the model's input: it is what the "
            "context is retrieved for and what is recorded")
    return index


def calls_tools(output: Any) -> bool:
    """Whether a model's output is a request to call tools (an agent's intermediate step)."""
    return isinstance(output, AIMessage) and bool(output.tool_calls)


def with_context(
    system: SystemMessage | None,
    messages: Sequence[BaseMessage],
    prompts: Prompts,
    recent: Sequence[BaseMessage],
) -> tuple[SystemMessage, list[BaseMessage]]:
    """The system message with TrueMem's prompt appended, and the conversation to send.

    TrueMem's ``recent`` turns go before the conversation only when the caller
    sent none of its own (nothing before the latest user message): a caller that
    keeps its own history is not sent the same turns twice, nor what the window put
    in the system prompt (``Prompts``).
    """
    own = last_human(messages) > 0
    earlier = [] if own else list(recent)
    return _appended(system, prompts.alone if own else prompts.full), [*earlier, *messages]


def _appended(system: SystemMessage | None, prompt: str) -> SystemMessage:
    """``system`` with ``prompt`` after it. Content blocks stay blocks, with what they
    carry (Anthropic's ``cache_control``): the prompt is one more text block."""
    if system is None or not str(system.text).strip():
        return SystemMessage(prompt)
    if isinstance(system.content, list):
        return SystemMessage([*system.content, {"type": "text", "text": prompt}])
    return SystemMessage(f"{system.text}\n\n{prompt}")


class Prompts(NamedTuple):
    full: str
    """The system prompt to send with TrueMem's recent turns."""
    alone: str
    """Without what the recent window put in it: for a caller that keeps its history."""


def context_parts(context: Context) -> tuple[Prompts, list[BaseMessage]]:
    """A context as its system prompts and the recent turns as messages."""
    return (Prompts(context.to_system_prompt(), context.to_system_prompt(window=False)),
            [from_message(m) for m in context.turns])


def split_system(messages: Sequence[BaseMessage]) -> tuple[SystemMessage | None, list[BaseMessage]]:
    """Leading system messages merged into one, and the rest."""
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], SystemMessage):
        lead += 1
    if lead == 0:
        return None, list(messages)
    if lead == 1:
        return cast(SystemMessage, messages[0]), list(messages[1:])
    if all(isinstance(m.content, str) for m in messages[:lead]):
        return SystemMessage("\n\n".join(str(m.text) for m in messages[:lead])), list(
            messages[lead:])
    blocks = [block for m in messages[:lead] for block in (
        m.content if isinstance(m.content, list) else [{"type": "text", "text": m.content}])]
    return SystemMessage(blocks), list(messages[lead:])


def reply_text(output: Any) -> str:
    """The text of what a chat model (or a chain ending in a parser) returned.

    A structured output (a dict or a pydantic model, from ``with_structured_output``)
    is recorded as its JSON; with ``include_raw=True``, the parsed value, else the
    raw message.
    """
    if isinstance(output, BaseMessage):
        return str(output.text)
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    if isinstance(output, dict) and {"raw", "parsed"} <= output.keys():  # include_raw=True
        return reply_text(output["raw"] if output["parsed"] is None else output["parsed"])
    if isinstance(output, dict | list):
        try:
            return json.dumps(output, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            pass
    raise InvalidInputError(
        "with_truemem wraps a chat model, or a runnable that returns a message, a string "
        f"or a structured output (a dict or a pydantic model); got {type(output).__name__}")


def exchange(said: str, reply: str) -> list[tuple[str, str]]:
    """The turns to record for one exchange (a reply with no text is not recorded)."""
    return [("user", said), ("assistant", reply)] if reply.strip() else [("user", said)]


def last_exchange(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """The latest user message and the last text reply after it, as turns to record."""
    index = find_human(messages)
    if index is None:
        return []
    replies = [str(m.text) for m in messages[index + 1:] if role_of(m) == "assistant"]
    return exchange(str(messages[index].text), replies[-1] if replies else "")
