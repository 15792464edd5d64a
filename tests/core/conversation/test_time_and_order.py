"""Time and order in a context: a question about a sequence or an overview is served
what was said across the history, in date order, within the budget; of two statements
of the same thing, the latest comes first and the earlier is marked; every other
question is served as before (``conversation.timeline``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from truemem_core import Settings, TrueMem
from truemem_core.records import Context

MAY = datetime(2024, 5, 6, 18, 0, tzinfo=UTC)
STEPS = ["dug the raised beds", "built the compost bin", "planted the tomato seedlings",
         "installed the drip irrigation", "harvested the first tomatoes"]
SEQUENCE = "In what order did I do the different parts of my garden project?"


def _garden(memory: TrueMem) -> None:
    """Five sessions a week apart, one step of the project each; the first session is
    long and says "garden project" in every turn, so its turns are the best matches."""
    memory.record_messages("ana", "week-1", [
        ("user" if n % 2 == 0 else "assistant",
         f"Garden project planning note {n}: the garden project needs soil, seeds and "
         f"patience; we talked about my garden project layout again.", MAY)
        for n in range(40)] + [("user", f"For the garden project I {STEPS[0]}.", MAY)])
    for week, step in enumerate(STEPS[1:], start=2):
        memory.record_messages("ana", f"week-{week}", [
            ("user", f"Garden update: this week I {step}.", MAY + timedelta(weeks=week - 1)),
            ("assistant", "Sounds like good progress.", MAY + timedelta(weeks=week - 1))])
    memory.drain()


def _dated_lines(context: Context) -> list[str]:
    """The dated lines of the facts and turns (the syntheses' have their own section)."""
    sections = context.to_system_prompt().split("\n\n")
    return [line for section in sections if not section.startswith("Summaries of earlier")
            for line in section.splitlines() if line.startswith("- [")]


def test_a_sequence_question_is_served_every_session_in_date_order_within_budget(
    store_url: str,
) -> None:
    with TrueMem(store_url, settings=Settings(context_token_budget=600)) as memory:
        _garden(memory)
        context = memory.get_context("ana", "now", SEQUENCE)
    assert context.timeline
    sessions = {turn.session_id for turn in context.recalled}
    assert sessions == {f"week-{n}" for n in range(1, 6)}
    assert context.budget_spent <= 600
    days = [line[3:13] for line in _dated_lines(context)]
    assert days == sorted(days) and len(set(days)) == 5
    prompt = context.to_system_prompt()
    assert "in date order" in prompt and "From earlier conversations (may be" not in prompt


def test_the_timeline_can_be_switched_off(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(context_token_budget=600,
                                              timeline_recall=False)) as memory:
        _garden(memory)
        context = memory.get_context("ana", "now", SEQUENCE)
    assert not context.timeline
    assert {turn.session_id for turn in context.recalled} == {"week-1"}  # the best matches


def test_an_ordinary_question_is_served_as_without_the_time_rules(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        _garden(memory)
        context = memory.get_context("ana", "now", "What did I plant in the garden?")
    with TrueMem(store_url, settings=Settings(timeline_recall=False,
                                              latest_first=False)) as plain:
        before = plain.get_context("ana", "now", "What did I plant in the garden?")
    assert not context.timeline and not context.restated
    assert [t.message_id for t in context.recalled] == [t.message_id for t in before.recalled]
    assert [h.memory.id for h in context.memories] == [h.memory.id for h in before.memories]
    assert context.to_system_prompt() == before.to_system_prompt()


def test_the_latest_of_two_conflicting_statements_ranks_first(memory: TrueMem) -> None:
    earlier, later = MAY, MAY + timedelta(days=30)
    memory.record_messages("ana", "spring", [
        ("user", "The weekly running target for my marathon plan is 20 kilometres.", earlier),
        ("assistant", "Good start for the marathon plan.", earlier)])
    memory.record_messages("ana", "summer", [
        ("user", "Quick note: for the marathon plan, the weekly running target is now "
                 "35 kilometres after my coach's review.", later),
        ("assistant", "That is a big step up.", later)])
    memory.drain()
    context = memory.get_context("ana", "today", "What is the weekly running target of my "
                                                 "marathon plan?")
    said = [turn.content for turn in context.recalled if "kilometres" in turn.content]
    assert len(said) == 2 and "35 kilometres" in said[0]  # it matches the question less
    assert context.recalled[0].content == said[0]
    lines = {line for line in _dated_lines(context) if "kilometres" in line}
    assert lines == {
        "- [2024-05-06, restated later] user: The weekly running target for my marathon "
        "plan is 20 kilometres.",
        "- [2024-06-05] user: Quick note: for the marathon plan, the weekly running target "
        "is now 35 kilometres after my coach's review."}
