"""How a near-duplicate folds in (``dedup.merge``) and what is pruned past the limit
(``pruning.select_for_pruning``): pure decisions, checked as properties."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from truemem_core.language.gist import gist
from truemem_core.memory.dedup import merge
from truemem_core.memory.lifecycle import PROTECTED_IMPORTANCE, is_protected
from truemem_core.memory.pruning import PruneCandidate, select_for_pruning
from truemem_core.records import SOURCES, Source

importances = st.integers(min_value=1, max_value=5)
texts = st.text(min_size=1, max_size=30)

# ----------------------------------------------------------------------------- merge


def test_the_more_complete_text_wins_and_the_stored_one_on_a_tie() -> None:
    decision = merge(old_text="Lives in Lisbon", old_importance=3,
                     new_text="Lives in Lisbon, Portugal", new_importance=2,
                     replay=False, reinforcement_cap=5)
    assert (decision.text, decision.importance, decision.reinforced) == (
        "Lives in Lisbon, Portugal", 4, True)
    kept = merge(old_text="Lives in Lisbon, Portugal", old_importance=3,
                 new_text="Lives in Lisbon", new_importance=3, replay=False, reinforcement_cap=5)
    assert kept.text == "Lives in Lisbon, Portugal"
    tie = merge(old_text="Likes tea", old_importance=2, new_text="Likes TEA", new_importance=2,
                replay=False, reinforcement_cap=5)
    assert tie.text == "Likes tea"  # says no more: the stored text stays


def test_a_replay_changes_nothing_but_the_text() -> None:
    decision = merge(old_text="Works as a nurse", old_importance=3, new_text="Works as a nurse",
                     new_importance=3, replay=True, reinforcement_cap=5)
    assert (decision.importance, decision.reinforced) == (3, False)


def test_an_importance_above_the_cap_is_never_lowered() -> None:
    decision = merge(old_text="Is allergic to peanuts", old_importance=5,
                     new_text="Is allergic to peanuts.", new_importance=2,
                     replay=False, reinforcement_cap=4)
    assert (decision.importance, decision.reinforced) == (5, True)


@given(old=texts, new=texts, old_importance=importances, new_importance=importances,
       replay=st.booleans(), cap=importances)
def test_merge_properties(old: str, new: str, old_importance: int, new_importance: int,
                          replay: bool, cap: int) -> None:
    decision = merge(old_text=old, old_importance=old_importance, new_text=new,
                     new_importance=new_importance, replay=replay, reinforcement_cap=cap)
    highest = max(old_importance, new_importance)
    assert decision.text in (old, new)
    assert decision.text == (new if gist(new).words > gist(old).words else old)
    assert decision.reinforced is not replay
    # never lower than either, raised by at most one, never raised past the cap
    assert highest <= decision.importance <= max(highest, cap)
    assert decision.importance == (highest if replay or highest >= cap else highest + 1)
    # which side said which importance does not matter
    swapped = merge(old_text=old, old_importance=new_importance, new_text=new,
                    new_importance=old_importance, replay=replay, reinforcement_cap=cap)
    assert swapped.importance == decision.importance
    # a pure decision
    assert decision == merge(old_text=old, old_importance=old_importance, new_text=new,
                             new_importance=new_importance, replay=replay, reinforcement_cap=cap)


# ----------------------------------------------------------------------------- pruning

_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def _candidate(
    memory_id: str, importance: int, source: Source = "manual", day: int = 0
) -> PruneCandidate:
    return PruneCandidate(memory_id, importance, source, _EPOCH + timedelta(days=day))


def test_lowest_importance_goes_first_then_the_oldest_then_by_id() -> None:
    candidates = [_candidate("a", 3, day=0), _candidate("b", 2, day=5), _candidate("c", 2, day=1),
                  _candidate("e", 1, day=9), _candidate("d", 1, day=9)]
    assert select_for_pruning(candidates, excess=4, protected_importance=4) == [
        "d", "e", "c", "b"]


def test_explicit_and_important_memories_are_never_pruned() -> None:
    candidates = [_candidate("told", 1, "explicit"), _candidate("key", 4),
                  _candidate("minor", 2, "extracted")]
    assert select_for_pruning(candidates, excess=3, protected_importance=4) == ["minor"]
    assert select_for_pruning(candidates, excess=0, protected_importance=4) == []
    assert select_for_pruning(candidates, excess=-2, protected_importance=4) == []


def test_is_protected_is_the_one_definition() -> None:
    assert is_protected(PROTECTED_IMPORTANCE, "manual")
    assert not is_protected(PROTECTED_IMPORTANCE - 1, "extracted")
    assert is_protected(1, "explicit")
    assert is_protected(3, "manual", protected_importance=3)


candidate_lists = st.lists(
    st.builds(_candidate, st.text(alphabet="abcdef", min_size=1, max_size=3), importances,
              st.sampled_from(SOURCES), st.integers(min_value=0, max_value=3)),
    max_size=20, unique_by=lambda c: c.id)


@given(candidates=candidate_lists, excess=st.integers(min_value=-1, max_value=25),
       protected=importances, seed=st.randoms(use_true_random=False))
def test_pruning_properties(candidates: list[PruneCandidate], excess: int, protected: int,
                            seed: random.Random) -> None:
    chosen = select_for_pruning(candidates, excess=excess, protected_importance=protected)
    eligible = [c for c in candidates
                if not is_protected(c.importance, c.source, protected_importance=protected)]
    # never more than asked, and as many as the unprotected allow
    assert len(chosen) == max(0, min(excess, len(eligible)))
    assert len(set(chosen)) == len(chosen)
    # protected memories are never chosen
    assert set(chosen) <= {c.id for c in eligible}
    # every chosen one ranks before every spared unprotected one
    key = {c.id: (c.importance, c.created_at, c.id) for c in candidates}
    spared = [key[c.id] for c in eligible if c.id not in chosen]
    assert all(key[i] < s for i in chosen for s in spared)
    assert [key[i] for i in chosen] == sorted(key[i] for i in chosen)
    # the order of the input does not matter
    shuffled = list(candidates)
    seed.shuffle(shuffled)
    assert select_for_pruning(shuffled, excess=excess, protected_importance=protected) == chosen
