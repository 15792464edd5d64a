"""The records TrueMem returns: plain frozen dataclasses, JSON-friendly via ``to_dict``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

Kind = Literal["semantic", "episodic"]
Source = Literal["explicit", "extracted", "manual"]
State = Literal["active", "ephemeral", "archived"]
Action = Literal[
    "added", "updated", "merged", "deleted", "pruned", "archived", "imported", "superseded",
    "feedback", "lifecycle",
]

KINDS: tuple[Kind, ...] = ("semantic", "episodic")
SOURCES: tuple[Source, ...] = ("explicit", "extracted", "manual")
STATES: tuple[State, ...] = ("active", "ephemeral", "archived")


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@dataclass(frozen=True, slots=True)
class Memory:
    """One fact about a user."""

    id: str
    user_id: str
    text: str
    importance: int
    kind: Kind
    source: Source
    state: State
    reinforcements: int
    created_at: datetime
    updated_at: datetime
    source_message_id: int | None = None
    valid_to: datetime | None = None
    """When the fact stopped being true (a newer fact superseded it); None while current."""
    superseded_by: str | None = None
    """The memory that superseded this one."""

    def to_dict(self) -> dict[str, Any]:
        return {key: _jsonable(value) for key, value in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    """A search hit that explains itself.

    ``score`` is the fused Reciprocal Rank Fusion score in hybrid search, or
    the channel's own score in a single-channel search (cosine for
    ``mode="vector"``). ``channels`` maps each channel that returned the memory
    to its score there, and ``ranks`` to its 1-based rank there.
    """

    memory: Memory
    score: float
    channels: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory.to_dict(), "score": self.score,
                "channels": self.channels, "ranks": self.ranks}

    def explain(self) -> str:
        """One line: the fused score, then each channel's rank and score."""
        parts = [f"{name} #{self.ranks[name]} ({self.channels[name]:.3g})"
                 for name in self.ranks]
        return f"{self.score:.4g} = " + (", ".join(parts) or "no channel")


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One change in a memory's history. A deleted memory's events keep no text."""

    memory_id: str
    action: Action
    created_at: datetime
    reason: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    old_importance: int | None = None
    new_importance: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {key: _jsonable(value) for key, value in asdict(self).items()}
