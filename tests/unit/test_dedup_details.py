"""Which similar facts may fold into one (pure)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from truemem_core.memory.dedup import centroid, details, same_details


@pytest.mark.parametrize(("a", "b"), [
    ("Lives in Berlin", "Lives in Berlin since 2019"),
    ("Is allergic to peanuts", "Is allergic to peanuts and tree nuts"),
    ("Prefers bullet points", "Prefers bullet points!"),
    ("Lives in Madrid", "Lives in Madrid, Spain"),
])
def test_a_refinement_is_the_same_fact(a: str, b: str) -> None:
    assert same_details(a, b) and same_details(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("Owns 5 cats in city 35", "Owns 10 cats in city 70"),
    ("Has a dog named Rex", "Has a dog named Max"),
    ("Works at Google", "Works at Microsoft"),
    ("Has two kids", "Has three kids"),
    ("Tiene dos hijos", "Tiene tres hijos"),
    ("Was born on 1990-03-15", "Was born on 1991-03-15"),
])
def test_a_changed_detail_is_another_fact(a: str, b: str) -> None:
    assert not same_details(a, b) and not same_details(b, a)


def test_details_are_numbers_number_words_and_names() -> None:
    assert details("Ran 5.5 km with Ana in three hours") == {"5.5", "Ana", "three"}
    assert details("Is vegan") == frozenset()  # the first word is no name


@given(st.lists(st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4),
                min_size=1, max_size=6))
def test_the_centroid_is_a_unit_vector_whatever_the_order(rows: list[list[float]]) -> None:
    vectors = [np.asarray(r, dtype=np.float32) + np.float32(2.0) for r in rows]  # nonzero
    weights = [float(n + 1) for n in range(len(vectors))]
    forward = centroid(vectors, weights)
    backward = centroid(vectors[::-1], weights[::-1])
    assert np.isclose(np.linalg.norm(forward), 1.0, atol=1e-5)
    assert np.allclose(forward, backward, atol=1e-5)
