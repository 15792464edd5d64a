"""Writers of one user's rows at once, on both backends: each write a call acknowledged
is in the store, the last acknowledged edit wins, no untyped error, no deadlock
(``writer_pairs``: every writer takes the user's lock first, ``Database.writing``)."""

from __future__ import annotations

import itertools

import pytest
from writer_pairs import WRITERS, race_writers

from truemem_core import TrueMem

# A bare KeyError hit add_memories when a deletion committed between its two reads of
# the user's rows; this pair runs longer, so that the window comes up on every run.
LONGER = {("delete", "add_memories"): 24}


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(WRITERS, 2)))
def test_two_writers_of_one_user_lose_no_acknowledged_write(
    memory: TrueMem, first: str, second: str
) -> None:
    report = race_writers(memory, first, second, rounds=LONGER.get((first, second), 12))
    assert report.violations == []
    assert report.acknowledged > 0


def test_erasing_while_adding_and_deleting_does_not_deadlock(memory: TrueMem) -> None:
    # each waited on rows another held, in a cycle, before all took the user's lock first
    report = race_writers(memory, "add_memories", "erase", "delete")
    assert report.violations == []
    assert report.untyped == 0
