"""Adaptive importance and lifecycle states: pure decisions, no I/O.

A memory's dynamic score in [0, 1] is its strength times its freshness::

    strength  = clamp(0.3                                    every memory starts alive
                      + 0.4 × (importance − 1) / 4           the 1-5 rank
                      + 0.15 × (1 − e^(−retrievals / 5))     used in answers
                      + 0.15 × (1 − e^(−reinforcements / 3)) restated by the user
                      + 0.3 × tanh(feedback / 2))            +1 helpful, −2 wrong
    freshness = 0.5 ^ (idle_days / half_life(importance))
    half_life = base_days × (1 + (importance − 1) × 5/4)

``idle_days`` counts from the last retrieval (or creation). The half-life
grows with importance, so an importance-5 memory decays exactly six times
slower than an importance-1 memory: 30 against 180 days by default. A
decision about the architecture stays relevant for months; a debugging
workaround fades in weeks.

States follow the score: ``active`` (ranked normally), ``ephemeral``
(down-ranked) and ``archived`` (out of standard search, still findable). A
retrieved memory is reactivated. Protected memories (importance >= 4, or an
explicit request) are never moved below ``active`` automatically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from truemem_core.records import Feedback, Source, State

BASE_HALF_LIFE_DAYS = 30.0
EPHEMERAL_BELOW = 0.25
ARCHIVE_BELOW = 0.1
HYSTERESIS = 0.05  # a state goes back up only past its threshold plus this: no flapping
PROTECTED_IMPORTANCE = 4

# What one piece of user feedback adds to a memory's ``feedback`` total. A memory
# found wrong costs twice what a helpful one earns: a wrong fact does more harm.
FEEDBACK: dict[Feedback, int] = {"helpful": 1, "irrelevant": -1, "wrong": -2}

_RANK: dict[State, int] = {"archived": 0, "ephemeral": 1, "active": 2}
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    base: float = 0.3
    importance: float = 0.4
    retrievals: float = 0.15
    reinforcements: float = 0.15
    feedback: float = 0.3
    retrieval_scale: float = 5.0  # retrievals at which usage is ~63% of its weight
    reinforcement_scale: float = 3.0
    feedback_scale: float = 2.0


DEFAULT_WEIGHTS = ScoreWeights()


def half_life_days(importance: int, base_days: float = BASE_HALF_LIFE_DAYS) -> float:
    """``base_days`` for importance 1 up to six times that for importance 5."""
    _check_importance(importance)
    return base_days * (1 + (importance - 1) * 5 / 4)


def freshness(idle_days: float, importance: int, base_days: float = BASE_HALF_LIFE_DAYS) -> float:
    """Exponential decay: 1 when just used, 0.5 after one half-life."""
    return math.pow(0.5, max(0.0, idle_days) / half_life_days(importance, base_days))


def strength(
    *, importance: int, retrievals: int, reinforcements: int, feedback: int,
    weights: ScoreWeights = DEFAULT_WEIGHTS,
) -> float:
    """Everything but time, in [0, 1]; never lower for more of any signal."""
    _check_importance(importance)
    if retrievals < 0 or reinforcements < 0:
        raise ValueError("retrievals and reinforcements must be >= 0")
    w = weights
    value = (
        w.base
        + w.importance * (importance - 1) / 4
        + w.retrievals * (1 - math.exp(-retrievals / w.retrieval_scale))
        + w.reinforcements * (1 - math.exp(-reinforcements / w.reinforcement_scale))
        + w.feedback * math.tanh(feedback / w.feedback_scale)
    )
    return min(1.0, max(0.0, value))


def dynamic_score(
    *,
    importance: int,
    retrievals: int,
    last_access: datetime | None,
    created_at: datetime,
    reinforcements: int,
    feedback: int,
    now: datetime,
    weights: ScoreWeights = DEFAULT_WEIGHTS,
    base_half_life_days: float = BASE_HALF_LIFE_DAYS,
) -> float:
    """The memory's current score in [0, 1] (see the module docstring).

    ``feedback`` is the running total of ``FEEDBACK`` values. Pass aware
    datetimes; a ``last_access`` in the future counts as now.
    """
    since = created_at if last_access is None else max(created_at, last_access)
    idle_days = (now - since).total_seconds() / _SECONDS_PER_DAY
    s = strength(importance=importance, retrievals=retrievals,
                 reinforcements=reinforcements, feedback=feedback, weights=weights)
    return s * freshness(idle_days, importance, base_half_life_days)


def is_protected(
    importance: int, source: Source, *, protected_importance: int = PROTECTED_IMPORTANCE
) -> bool:
    """Protected memories stay ``active`` whatever their score, and are never pruned.

    The one definition: important enough, or something the user asked to keep
    ("remember that…"), even after the user lowered its importance.
    """
    return importance >= protected_importance or source == "explicit"


def _level(score: float, ephemeral_below: float, archive_below: float) -> State:
    if score >= ephemeral_below:
        return "active"
    return "ephemeral" if score >= archive_below else "archived"


def next_state(
    current_state: State,
    score: float,
    *,
    ephemeral_below: float = EPHEMERAL_BELOW,
    archive_below: float = ARCHIVE_BELOW,
    hysteresis: float = HYSTERESIS,
    protected: bool = False,
) -> State:
    """The state a memory with ``score`` should be in now.

    Down as soon as the score falls below a threshold (straight to ``archived``
    when it falls below both); back up only once it clears a threshold by
    ``hysteresis``. A protected memory is always ``active``.
    """
    if not 0.0 <= archive_below <= ephemeral_below <= 1.0 or hysteresis < 0:
        raise ValueError("need 0 <= archive_below <= ephemeral_below <= 1 and hysteresis >= 0")
    if protected:
        return "active"
    down = _level(score, ephemeral_below, archive_below)
    if _RANK[down] < _RANK[current_state]:
        return down
    up = _level(score, ephemeral_below + hysteresis, archive_below + hysteresis)
    return up if _RANK[up] > _RANK[current_state] else current_state


def search_penalty(state: State, *, ephemeral: float = 0.5, archived: float = 0.25) -> float:
    """Multiplier of a memory's ranking score by state: ephemeral and archived rank lower."""
    return {"active": 1.0, "ephemeral": ephemeral, "archived": archived}[state]


def _check_importance(importance: int) -> None:
    if not 1 <= importance <= 5:
        raise ValueError(f"importance must be 1-5, got {importance}")
