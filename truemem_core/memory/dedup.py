"""How a near-duplicate folds into the stored memory: a pure decision, no I/O."""

from __future__ import annotations

from dataclasses import dataclass


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
