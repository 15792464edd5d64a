"""Adaptive importance: the dynamic score, its decay, and the lifecycle states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truemem_core.memory.lifecycle import (
    ARCHIVE_BELOW,
    EPHEMERAL_BELOW,
    FEEDBACK,
    dynamic_score,
    freshness,
    half_life_days,
    is_protected,
    next_state,
    search_penalty,
)
from truemem_core.records import STATES, Source, State

PROPERTY = settings(database=None, deadline=None)
NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)

importances = st.integers(1, 5)
counts = st.integers(0, 1000)
feedbacks = st.integers(-50, 50)
ages = st.floats(0, 3650)


def score(
    *, importance: int = 3, retrievals: int = 0, age_days: float = 0.0,
    idle_days: float | None = None, reinforcements: int = 0, feedback: int = 0,
) -> float:
    created = NOW - timedelta(days=age_days)
    last = None if idle_days is None else NOW - timedelta(days=idle_days)
    return dynamic_score(importance=importance, retrievals=retrievals, last_access=last,
                         created_at=created, reinforcements=reinforcements, feedback=feedback,
                         now=NOW)


# -- decay ----------------------------------------------------------------------


def test_importance_five_decays_exactly_six_times_slower_than_importance_one() -> None:
    assert half_life_days(5) / half_life_days(1) == 6.0
    assert half_life_days(5, base_days=7.0) / half_life_days(1, base_days=7.0) == 6.0


@pytest.mark.parametrize(
    ("importance", "days"), [(1, 30.0), (2, 67.5), (3, 105.0), (4, 142.5), (5, 180.0)]
)
def test_half_life_grows_linearly_with_importance(importance: int, days: float) -> None:
    assert half_life_days(importance) == days


@pytest.mark.parametrize("importance", [1, 2, 3, 4, 5])
def test_freshness_halves_every_half_life(importance: int) -> None:
    life = half_life_days(importance)
    assert freshness(0, importance) == 1.0
    assert freshness(life, importance) == pytest.approx(0.5)
    assert freshness(2 * life, importance) == pytest.approx(0.25)


@pytest.mark.parametrize("days", [1.0, 10.0, 30.0, 90.0])
def test_importance_five_at_six_times_the_age_is_as_fresh_as_importance_one(days: float) -> None:
    assert freshness(6 * days, 5) == pytest.approx(freshness(days, 1))


def test_a_retrieval_restarts_the_clock() -> None:
    assert score(age_days=200, idle_days=0) > score(age_days=200)
    assert score(age_days=200, idle_days=0, retrievals=1) == score(age_days=0, retrievals=1)


def test_a_last_access_in_the_future_counts_as_now() -> None:
    assert score(age_days=10, idle_days=-5) == score(age_days=0)


def test_a_last_access_before_creation_counts_from_creation() -> None:
    assert score(age_days=10, idle_days=400) == score(age_days=10)


@pytest.mark.parametrize("importance", [0, 6, -1])
def test_importance_out_of_range_is_refused(importance: int) -> None:
    with pytest.raises(ValueError, match="importance"):
        score(importance=importance)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        score(retrievals=-1)
    with pytest.raises(ValueError, match=">= 0"):
        score(reinforcements=-1)


# -- signals ---------------------------------------------------------------------


def test_a_new_memory_starts_active() -> None:
    for importance in range(1, 6):
        assert score(importance=importance) >= EPHEMERAL_BELOW


def test_feedback_values() -> None:
    assert FEEDBACK == {"helpful": 1, "irrelevant": -1, "wrong": -2}


def test_a_wrong_memory_falls_and_a_helpful_one_rises() -> None:
    neutral = score(importance=2)
    assert score(importance=2, feedback=FEEDBACK["helpful"]) > neutral
    assert score(importance=2, feedback=FEEDBACK["wrong"]) < neutral
    # one "wrong" weighs more than one "helpful"
    up = score(importance=2, feedback=1) - neutral
    down = neutral - score(importance=2, feedback=-2)
    assert down > up


def test_one_wrong_verdict_archives_a_new_minor_memory() -> None:
    wrong = score(importance=1, feedback=FEEDBACK["wrong"])
    assert next_state("active", wrong) == "archived"


@pytest.mark.parametrize(
    ("weak", "strong"),
    [
        ({"retrievals": 0}, {"retrievals": 10}),
        ({"reinforcements": 0}, {"reinforcements": 3}),
        ({"importance": 1}, {"importance": 5}),
        ({"age_days": 60}, {"age_days": 1}),
        ({"feedback": -2}, {"feedback": 3}),
    ],
)
def test_each_signal_raises_the_score(weak: dict[str, int], strong: dict[str, int]) -> None:
    assert score(**strong) > score(**weak)


# -- properties ------------------------------------------------------------------


@PROPERTY
@given(importances, counts, ages, counts, feedbacks)
def test_score_is_in_unit_range(
    importance: int, retrievals: int, age: float, reinforcements: int, feedback: int
) -> None:
    value = score(importance=importance, retrievals=retrievals, age_days=age,
                  reinforcements=reinforcements, feedback=feedback)
    assert 0.0 <= value <= 1.0


@PROPERTY
@given(importances, counts, counts, ages, counts, feedbacks)
def test_more_retrievals_never_lower_the_score(
    importance: int, a: int, b: int, age: float, reinforcements: int, feedback: int
) -> None:
    fewer, more = sorted((a, b))
    common: dict[str, Any] = {
        "importance": importance, "age_days": age,
        "reinforcements": reinforcements, "feedback": feedback,
    }
    assert score(retrievals=more, **common) >= score(retrievals=fewer, **common)


@PROPERTY
@given(importances, counts, ages, ages, counts, feedbacks)
def test_older_never_raises_the_score(
    importance: int, retrievals: int, a: float, b: float, reinforcements: int, feedback: int
) -> None:
    younger, older = sorted((a, b))
    common: dict[str, Any] = {
        "importance": importance, "retrievals": retrievals,
        "reinforcements": reinforcements, "feedback": feedback,
    }
    assert score(age_days=older, **common) <= score(age_days=younger, **common)


@PROPERTY
@given(importances, counts, ages, counts, counts, feedbacks)
def test_more_reinforcements_never_lower_the_score(
    importance: int, retrievals: int, age: float, a: int, b: int, feedback: int
) -> None:
    fewer, more = sorted((a, b))
    common: dict[str, Any] = {
        "importance": importance, "retrievals": retrievals,
        "age_days": age, "feedback": feedback,
    }
    assert score(reinforcements=more, **common) >= score(reinforcements=fewer, **common)


@PROPERTY
@given(importances, counts, ages, counts, feedbacks, feedbacks)
def test_better_feedback_never_lowers_the_score(
    importance: int, retrievals: int, age: float, reinforcements: int, a: int, b: int
) -> None:
    worse, better = sorted((a, b))
    common: dict[str, Any] = {
        "importance": importance, "retrievals": retrievals,
        "age_days": age, "reinforcements": reinforcements,
    }
    assert score(feedback=better, **common) >= score(feedback=worse, **common)


@PROPERTY
@given(importances, importances, counts, ages, counts, feedbacks)
def test_higher_importance_never_lowers_the_score(
    a: int, b: int, retrievals: int, age: float, reinforcements: int, feedback: int
) -> None:
    low, high = sorted((a, b))
    common: dict[str, Any] = {
        "retrievals": retrievals, "age_days": age,
        "reinforcements": reinforcements, "feedback": feedback,
    }
    assert score(importance=high, **common) >= score(importance=low, **common)


# -- lifecycle states ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "value", "expected"),
    [
        ("active", 0.9, "active"),
        ("active", EPHEMERAL_BELOW, "active"),
        ("active", 0.2, "ephemeral"),
        ("active", 0.05, "archived"),  # a collapse skips ephemeral
        ("ephemeral", 0.2, "ephemeral"),
        ("ephemeral", 0.05, "archived"),
        ("ephemeral", 0.27, "ephemeral"),  # above the threshold, not past the hysteresis
        ("ephemeral", 0.31, "active"),
        ("archived", 0.05, "archived"),
        ("archived", 0.12, "archived"),
        ("archived", 0.16, "ephemeral"),
        ("archived", 0.5, "active"),
    ],
)
def test_state_transitions(current: State, value: float, expected: State) -> None:
    assert next_state(current, value) == expected


def test_thresholds_are_parameters() -> None:
    assert next_state("active", 0.5, ephemeral_below=0.6, archive_below=0.4) == "ephemeral"
    assert next_state("active", 0.3, ephemeral_below=0.6, archive_below=0.4) == "archived"
    assert next_state("ephemeral", 0.61, ephemeral_below=0.6, hysteresis=0.0) == "active"


@pytest.mark.parametrize(
    "kwargs",
    [{"ephemeral_below": 0.1, "archive_below": 0.2}, {"archive_below": -0.1},
     {"ephemeral_below": 1.5}, {"hysteresis": -0.01}],
)
def test_bad_thresholds_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="archive_below"):
        next_state("active", 0.5, **kwargs)


@PROPERTY
@given(st.sampled_from(STATES), st.floats(0, 1))
def test_protected_memories_stay_active(current: State, value: float) -> None:
    assert next_state(current, value, protected=True) == "active"


@PROPERTY
@given(st.sampled_from(STATES), st.floats(0, 1))
def test_a_state_is_stable_once_reached(current: State, value: float) -> None:
    settled = next_state(current, value)
    assert next_state(settled, value) == settled


@pytest.mark.parametrize(
    ("importance", "source", "protected"),
    [(5, "extracted", True), (4, "manual", True), (3, "extracted", False), (1, "manual", False),
     (1, "explicit", True), (3, "explicit", True)],
)
def test_protection(importance: int, source: Source, protected: bool) -> None:
    assert is_protected(importance, source) is protected


def test_protection_threshold_is_a_parameter() -> None:
    assert is_protected(3, "extracted", protected_importance=3)
    assert not is_protected(4, "extracted", protected_importance=5)


def test_an_old_untouched_protected_memory_keeps_its_state() -> None:
    value = score(importance=5, age_days=3650)
    assert value < ARCHIVE_BELOW
    assert next_state("active", value, protected=is_protected(5, "extracted")) == "active"


def test_an_old_untouched_minor_memory_is_archived() -> None:
    value = score(importance=1, age_days=120)
    assert next_state("active", value, protected=is_protected(1, "extracted")) == "archived"


def test_search_penalty() -> None:
    assert search_penalty("active") == 1.0
    assert search_penalty("ephemeral") == 0.5
    assert search_penalty("archived") < search_penalty("ephemeral")
    assert search_penalty("ephemeral", ephemeral=0.8) == 0.8
