"""LlamaIndex chat messages <-> TrueMem's ``(role, text)`` turns and context (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock

from truemem_core import Context, Message

_ROLES = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant", MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.SYSTEM: "system", MessageRole.DEVELOPER: "system",
}
_TO_LLAMA = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT,
             "system": MessageRole.SYSTEM}


def text_of(message: ChatMessage) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def role_of(message: ChatMessage) -> str | None:
    """TrueMem's role for a message, or None for what it does not store (tools, tool calls)."""
    if message.additional_kwargs.get("tool_calls") or any(
            isinstance(b, ToolCallBlock) for b in message.blocks):
        return None  # an intermediate step of an agent, not a reply to the user
    return _ROLES.get(MessageRole(message.role))


def to_turns(messages: Iterable[ChatMessage]) -> list[tuple[str, str]]:
    """The ``(role, text)`` turns TrueMem records: text only, no tool traffic, no empties."""
    turns = []
    for message in messages:
        role, text = role_of(message), text_of(message)
        if role == "assistant":
            text = _answer(text)
        if role is not None and text:
            turns.append((role, text))
    return turns


def _answer(text: str) -> str:
    """A ReAct agent's reply: it puts its whole trace in memory as one message (thoughts,
    actions, tool observations, then ``Answer: ...``); the answer is what was said."""
    if not text.startswith("Thought:") or "\nAnswer:" not in text:
        return text
    return text.rpartition("\nAnswer:")[2].strip()


def chat_message(role: str, content: str) -> ChatMessage:
    return ChatMessage(role=_TO_LLAMA[role], content=content)


def from_messages(recent: Sequence[Message]) -> list[ChatMessage]:
    return [chat_message(m.role, m.content) for m in recent]


def summary_message(summary: str | None) -> list[ChatMessage]:
    """The running summary as a system message, when there is one."""
    if summary is None:
        return []
    return [chat_message("system", f"Summary of the earlier conversation:\n{summary}")]


def context_messages(context: Context) -> list[ChatMessage]:
    """TrueMem's system prompt (memories and summary), then the recent turns."""
    return [chat_message("system", context.to_system_prompt()),
            *from_messages(context.turns)]


def latest_user_text(messages: Sequence[ChatMessage]) -> str:
    """The text of the latest user message ('' when there is none)."""
    for message in reversed(messages):
        if role_of(message) == "user" and text_of(message):
            return text_of(message)
    return ""
