"""``as_of`` / ``valid_at`` on ``search`` and ``list_memories``: what was recorded, and what
was true, at an instant; without them, today's behaviour."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from db_access import execute
from sqlalchemy import update

from truemem_core import InvalidInputError, Settings, TrueMem
from truemem_core.storage.schema import memories

JAN = datetime(2026, 1, 1, tzinfo=UTC)
FEB = datetime(2026, 2, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)
APR = datetime(2026, 4, 1, tzinfo=UTC)


def _set(memory: TrueMem, memory_id: str, **values: object) -> None:
    execute(memory, update(memories).where(memories.c.id == memory_id).values(**values))


def test_as_of_and_valid_at_on_memories(memory: TrueMem) -> None:
    acme = memory.add_memory("ana", "Ana works at Acme")
    violin = memory.add_memory("ana", "Ana plays the violin in an orchestra")
    # Acme: recorded in January, true from January until March, superseded in March
    _set(memory, acme.id, created_at=JAN, valid_from=JAN, valid_to=MAR, invalidated_at=MAR)
    # the violin: recorded in April, true from March (learnt late)
    _set(memory, violin.id, created_at=APR, valid_from=MAR)

    def listed(**when: datetime) -> set[str]:
        return {m.text for m in memory.list_memories("ana", **when)}

    def found(**when: datetime) -> set[str]:
        return {hit.memory.text for hit in memory.search("ana", "Ana", **when)}

    for read in (listed, found):
        assert read() == {"Ana works at Acme", "Ana plays the violin in an orchestra"}  # as today
        assert read(as_of=FEB) == {"Ana works at Acme"}
        assert read(as_of=MAR) == set()  # Acme closed, the violin not yet recorded
        assert read(as_of=APR) == {"Ana plays the violin in an orchestra"}
        assert read(valid_at=FEB) == {"Ana works at Acme"}
        assert read(valid_at=MAR) == {"Ana plays the violin in an orchestra"}
        assert read(as_of=APR, valid_at=FEB) == set()  # by April Acme was superseded


def test_a_fact_closed_since_is_seen_at_an_instant_it_held(memory: TrueMem) -> None:
    """Superseded, or called wrong: archived today, yet true (and recorded) before."""
    madrid = memory.add_memory("ana", "Lives in Madrid")
    cats = memory.add_memory("ana", "Has three cats")
    _set(memory, madrid.id, created_at=JAN, valid_from=JAN)
    _set(memory, cats.id, created_at=JAN, valid_from=JAN)
    memory.add_memory("ana", "Lives in Berlin")  # supersedes Madrid, now
    memory.feedback("ana", cats.id, "wrong")
    assert {m.state for m in memory.list_memories("ana", include_archived=True)
            if m.id in (madrid.id, cats.id)} == {"archived"}
    for when in ({"as_of": FEB}, {"valid_at": FEB}):
        assert {m.text for m in memory.list_memories("ana", **when)} == {
            "Lives in Madrid", "Has three cats"}
        assert {h.memory.text for h in memory.search("ana", "Madrid cats", **when)} == {
            "Lives in Madrid", "Has three cats"}
        assert memory.search("ana", "Madrid cats", state="active", **when) == []
    assert {m.text for m in memory.list_memories("ana")} == {"Lives in Berlin"}


def test_time_travel_to_now_shows_what_is_shown_without_it(memory: TrueMem) -> None:
    """What pruning or decay archived was never closed: travelling in time does not bring
    it back, as the facts closed since come back."""
    with TrueMem(memory.admin.database_url, settings=Settings(memory_limit=2)) as small:
        for text in ("Lives in Porto", "Works as a nurse at St Mary's",
                     "Has a cat named Miso", "Plays the cello on Sundays"):
            small.add_memory("ana", text, importance=1)
        now = datetime.now(UTC)
        shown = {m.id for m in small.list_memories("ana")}
        assert len(shown) == 2
        assert {m.id for m in small.list_memories("ana", as_of=now)} == shown
        assert {h.memory.id for h in small.search("ana", "cello cat Porto nurse",
                                                   valid_at=now)} == shown
        assert len(small.list_memories("ana", as_of=now, include_archived=True)) == 4


def test_naive_instants_are_refused(memory: TrueMem) -> None:
    with pytest.raises(InvalidInputError, match="timezone"):
        memory.list_memories("ana", as_of=datetime(2026, 1, 1))
    with pytest.raises(InvalidInputError, match="valid_at"):
        memory.search("ana", "x", valid_at="yesterday")  # type: ignore[arg-type]
