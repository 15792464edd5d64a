"""Time rules of an extracted memory: it is true from when its message was said (a history
imported with ``record_messages(said_at=…)`` yields memories dated then), it is stored
now, and every context shows the day each fact was said (recalled turns: see
test_served_context.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from truemem_core import TrueMem
from truemem_core.embeddings import TiktokenCounter
from truemem_core.records import Context

NOW = datetime.now(UTC).replace(microsecond=0)
A_YEAR_AGO = NOW - timedelta(days=365)


def _context_tokens_match_its_rendering(memory: TrueMem, context: Context) -> None:
    tokens = TiktokenCounter(memory.settings.token_encoding)
    assert context.tokens == sum(tokens.count(m["content"]) for m in context.to_messages())


def test_a_fact_said_a_year_ago_is_dated_then_and_shown_with_that_day(memory: TrueMem) -> None:
    memory.record_messages("ana", "past", [
        ("user", "I'm a data engineer at Acme and I live in Lisbon.", A_YEAR_AGO),
        ("assistant", "Nice!", A_YEAR_AGO),
    ])
    memory.drain()
    stored = memory.list_memories("ana")
    assert stored and {m.valid_from for m in stored} == {A_YEAR_AGO}
    # stored now (recorded time); decay counts from then, so the history is not archived
    assert all(m.created_at >= NOW - timedelta(minutes=5) for m in stored)
    assert all(m.state == "active" for m in stored)
    day = f"[{A_YEAR_AGO:%Y-%m-%d}]"
    context = memory.get_context("ana", "now", "Where do I work?")
    acme = next(m for m in context.facts if "Acme" in m.text)
    assert f"- {day} {acme.text}" in context.to_system_prompt()
    _context_tokens_match_its_rendering(memory, context)
    # as it was true a year ago, and an export carries the date
    assert {m.id for m in memory.list_memories("ana", valid_at=A_YEAR_AGO)} == {
        m.id for m in stored}
    memory.import_user("bea", memory.export_user("ana"))
    assert {m.valid_from for m in memory.list_memories("bea")} == {A_YEAR_AGO}


def test_a_changed_fact_ends_when_its_successor_was_said(memory: TrueMem) -> None:
    """Madrid, then Berlin half a year later: Madrid held until Berlin was said, not until
    the job read it, so the history answers "where did they live then?"."""
    moved = A_YEAR_AGO + timedelta(days=180)
    memory.record_messages("ana", "s1", [("user", "I live in Madrid.", A_YEAR_AGO)])
    memory.drain()
    memory.record_messages("ana", "s2", [("user", "I just moved to Berlin.", moved)])
    memory.drain()
    everything = memory.list_memories("ana", include_archived=True)
    madrid = next(m for m in everything if "Madrid" in m.text)
    berlin = next(m for m in everything if "Berlin" in m.text)
    assert madrid.superseded_by == berlin.id
    assert (madrid.valid_from, madrid.valid_to, berlin.valid_from) == (A_YEAR_AGO, moved, moved)
    before = memory.list_memories("ana", valid_at=moved - timedelta(days=1))
    after = memory.list_memories("ana", valid_at=moved + timedelta(days=1))
    assert [m.id for m in before] == [madrid.id] and [m.id for m in after] == [berlin.id]


def test_a_fact_closed_by_an_older_statement_never_ends_before_it_began(
        memory: TrueMem) -> None:
    """A history recorded out of order: supersession follows the order facts are stored
    in, and the closed fact's validity ends at its own start, never before it."""
    moved = A_YEAR_AGO + timedelta(days=180)
    memory.record_messages("ana", "s2", [("user", "I just moved to Berlin.", moved)])
    memory.drain()
    memory.record_messages("ana", "s1", [("user", "I live in Madrid.", A_YEAR_AGO)])
    memory.drain()
    everything = memory.list_memories("ana", include_archived=True)
    berlin = next(m for m in everything if "Berlin" in m.text)
    assert berlin.superseded_by is not None
    assert berlin.valid_from == berlin.valid_to == moved
