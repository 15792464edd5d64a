"""What ``get_context`` returns, and how it renders for an LLM (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .conversation import Message
from .models import Memory, ScoredMemory
from .recall import RecalledTurn

_PREAMBLE = (
    "You are talking with a returning user. Use what you remember about them when it "
    "helps; do not recite it."
)


@dataclass(frozen=True, slots=True)
class Context:
    """Everything the model should know before answering ``message``."""

    user_id: str
    session_id: str
    message: str
    summary: str | None
    recent_messages: list[Message]
    memories: list[ScoredMemory]
    explicit: list[Memory]
    recalled: list[RecalledTurn] = field(default_factory=list)
    tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def facts(self) -> list[Memory]:
        """Explicit memories from this message first, then the retrieved ones, no repeats."""
        by_id: dict[str, Memory] = {}
        for memory in [*self.explicit, *(hit.memory for hit in self.memories)]:
            by_id.setdefault(memory.id, memory)
        return list(by_id.values())

    def to_system_prompt(self) -> str:
        parts = [_PREAMBLE]
        if self.facts:
            parts.append("What you remember about the user:\n" + "\n".join(
                f"- {m.text}" for m in self.facts))
        if self.recalled:
            parts.append("From earlier conversations (may be relevant):\n" + "\n".join(
                f"- [{t.created_at:%Y-%m-%d}] {t.role}: {t.content}" for t in self.recalled))
        if self.summary:
            parts.append(f"Summary of the earlier conversation:\n{self.summary}")
        return "\n\n".join(parts)

    def to_messages(self, *, include_message: bool = True) -> list[dict[str, str]]:
        """System prompt, the recent messages verbatim, then (by default) ``message``."""
        rendered = [{"role": "system", "content": self.to_system_prompt()}]
        rendered += [{"role": m.role, "content": m.content} for m in self.recent_messages]
        if include_message:
            rendered.append({"role": "user", "content": self.message})
        return rendered

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "message": self.message,
            "summary": self.summary,
            "recent_messages": [m.to_dict() for m in self.recent_messages],
            "memories": [hit.to_dict() for hit in self.memories],
            "explicit": [m.to_dict() for m in self.explicit],
            "recalled": [t.to_dict() for t in self.recalled],
            "system_prompt": self.to_system_prompt(),
            "tokens": self.tokens,
            "timings": self.timings,
        }
