"""Which memories to prune past the soft limit: a pure decision, no I/O."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from truemem_core.memory.lifecycle import is_protected
from truemem_core.records import Source


@dataclass(frozen=True, slots=True)
class PruneCandidate:
    id: str
    importance: int
    source: Source
    created_at: datetime


def select_for_pruning(
    candidates: Sequence[PruneCandidate], *, excess: int, protected_importance: int
) -> list[str]:
    """Ids to prune: lowest importance first, oldest first within a tie.

    Protected memories (``lifecycle.is_protected``: importance at or above
    ``protected_importance``, or explicit) are never chosen, so fewer than
    ``excess`` ids come back when the rest are protected.
    """
    if excess <= 0:
        return []
    eligible = [c for c in candidates if not is_protected(
        c.importance, c.source, protected_importance=protected_importance)]
    return [c.id for c in heapq.nsmallest(excess, eligible, key=prune_order)]


def prune_order(candidate: PruneCandidate) -> tuple[int, datetime, str]:
    """The order pruning takes memories in: lowest importance first, oldest within a tie."""
    return candidate.importance, candidate.created_at, candidate.id
