"""Pure decisions about memories: dedup merges and pruning. No I/O here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Merge:
    text: str
    importance: int
    reinforced: bool


def merge(
    *,
    old_text: str,
    old_importance: int,
    new_text: str,
    new_importance: int,
    replay: bool,
    reinforcement_cap: int,
) -> Merge:
    """How a near-duplicate folds into the stored memory.

    The more complete text wins (the longer one; the newer on a tie). Importance
    becomes the max of the two, and a genuine restatement — anything but a replay
    of the same source message — raises it by one more, up to
    ``reinforcement_cap``. So facts seen again across conversations climb, while
    a one-off extraction keeps its rank and is pruned first.
    """
    text = old_text if len(old_text) > len(new_text) else new_text
    importance = max(old_importance, new_importance)
    if not replay and importance < reinforcement_cap:
        importance += 1
    return Merge(text=text, importance=importance, reinforced=not replay)


@dataclass(frozen=True, slots=True)
class PruneCandidate:
    id: str
    importance: int
    created_at: datetime


def select_for_pruning(
    candidates: Sequence[PruneCandidate], *, excess: int, protected_importance: int
) -> list[str]:
    """Ids to prune: lowest importance first, oldest first within a tie.

    Memories at or above ``protected_importance`` are never chosen, so fewer
    than ``excess`` ids come back when the rest are protected.
    """
    if excess <= 0:
        return []
    eligible = [c for c in candidates if c.importance < protected_importance]
    eligible.sort(key=lambda c: (c.importance, c.created_at, c.id))
    return [c.id for c in eligible[:excess]]
