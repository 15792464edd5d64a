"""Which stored fact a new one restates, supersedes, closes, or leaves alone (pure)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from truemem_core.language.gist import gist
from truemem_core.memory.decision import decide
from truemem_core.memory.dedup import centroid


@pytest.mark.parametrize(("a", "b"), [
    ("Lives in Berlin", "Lives in Berlin since 2019"),
    ("Is allergic to peanuts", "Is allergic to peanuts and tree nuts"),
    ("Prefers bullet points", "Prefers bullet points!"),
    ("Lives in Madrid", "Lives in Madrid, Spain"),
    ("Lives in Berlin", "Resides in Berlin"),
    ("Has two kids", "Has 2 kids"),
    ("Her mom is a nurse", "Her mother is a nurse"),
])
def test_a_restatement_or_refinement_is_the_same_fact(a: str, b: str) -> None:
    assert decide(a, b, similar=True).action == "reinforce"
    assert decide(b, a, similar=True).action == "reinforce"
    assert decide(a, b, similar=False).action == "distinct"  # wording alone never folds


@pytest.mark.parametrize(("a", "b"), [
    ("Owns 5 cats in city 35", "Owns 10 cats in city 70"),
    ("Has a dog named Rex", "Has a dog named Max"),
    ("Has two kids", "Has three kids"),
    ("Tiene dos hijos", "Tiene tres hijos"),
    ("Was born on 1990-03-15", "Was born on 1991-03-15"),
    ("Enjoys hiking with their mother", "Enjoys hiking with their grandmother"),
    ("Went to a heavy metal concert in Valencia",
     "Went to a classical music concert in Valencia"),
    ("before delete", "after delete"),
    ("Visited Milan in May", "Visited Milan in October"),
    ("Su hija vive en Madrid", "Su hijo vive en Madrid"),
])
def test_a_changed_detail_is_another_fact(a: str, b: str) -> None:
    assert decide(a, b, similar=True).action == "distinct"
    assert decide(b, a, similar=True).action == "distinct"


@pytest.mark.parametrize(("old", "new", "reason"), [
    ("Is allergic to peanuts", "Is not allergic to peanuts", "negated"),
    ("Takes insulin daily", "Stopped taking insulin", "negated"),
    ("Smokes", "Doesn't smoke anymore", "negated"),
    ("Vive en Madrid", "Ya no vive en Madrid", "negated"),
    ("Fuma", "Dejó de fumar", "negated"),
    ("Fuma", "Parou de fumar", "negated"),
    ("Stopped taking insulin", "Started taking insulin again", "reversed"),
    ("Can't eat gluten", "Eats gluten", "reversed"),
])
def test_a_negation_or_an_ending_closes_the_old_fact(old: str, new: str, reason: str) -> None:
    decision = decide(old, new, similar=True)
    assert (decision.action, decision.reason) == ("close", f"{reason}: {new}")


def test_a_negation_about_something_else_closes_nothing() -> None:
    # "not tree nuts" must not close the peanuts, nor a longer fact lose a detail
    assert decide("Is allergic to peanuts", "Is not allergic to tree nuts",
                  similar=True).action == "distinct"
    assert decide("Is allergic to peanuts and tree nuts", "Is not allergic to peanuts",
                  similar=True).action == "distinct"


def test_a_changed_value_supersedes_with_its_reason() -> None:
    decision = decide("Lives in Madrid", "Lives in Berlin", similar=True)
    assert decision.action == "supersede"
    assert decision.reason == "location of user: madrid -> berlin"


def test_the_gist_drops_function_words_and_stems() -> None:
    assert gist("User's dog is called Rex.") == gist("Has a dog named Rex")
    assert gist("Doesn't take insulin").negated and not gist("Takes insulin").negated
    assert gist("Doesn't take insulin").words == gist("Takes insulin").words


@given(st.lists(st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4),
                min_size=1, max_size=6))
def test_the_centroid_is_a_unit_vector_whatever_the_order(rows: list[list[float]]) -> None:
    vectors = [np.asarray(r, dtype=np.float32) + np.float32(2.0) for r in rows]  # nonzero
    weights = [float(n + 1) for n in range(len(vectors))]
    forward = centroid(vectors, weights)
    backward = centroid(vectors[::-1], weights[::-1])
    assert np.isclose(np.linalg.norm(forward), 1.0, atol=1e-5)
    assert np.allclose(forward, backward, atol=1e-5)
