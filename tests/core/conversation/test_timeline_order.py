"""The order packing takes facts and turns in (``conversation.timeline``): spread over
the days for a timeline, the latest of several statements of one thing first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from truemem_core.conversation.packing import pack
from truemem_core.conversation.timeline import arrange, latest_first, restated, spread
from truemem_core.records import Context, Memory, RecalledTurn, ScoredMemory

DAY = datetime(2024, 3, 8, tzinfo=UTC)


def turn(message_id: int, content: str, score: float, days: int = 0) -> RecalledTurn:
    return RecalledTurn(message_id, f"s{days}", "user", content, DAY + timedelta(days=days),
                        score, len(content.split()))


def fact(memory_id: str, text: str, score: float, days: int, source: int) -> ScoredMemory:
    said = DAY + timedelta(days=days)
    return ScoredMemory(Memory(memory_id, "ana", text, 3, "semantic", "extracted", "active", 0,
                               said, said, source_message_id=source, valid_from=said), score)


def test_a_timeline_takes_each_days_best_before_any_days_second() -> None:
    ranked = [turn(1, "a", 0.9, 0), turn(2, "b", 0.8, 0), turn(3, "c", 0.7, 0),
              turn(4, "d", 0.3, 5), turn(5, "e", 0.2, 9), turn(6, "f", 0.1, 9)]
    assert [t.message_id for t in spread(ranked)] == [1, 4, 5, 2, 6, 3]  # type: ignore[union-attr]


def test_the_latest_statement_takes_the_best_place_of_its_group() -> None:
    old = fact("old", "Weekly word count target is 500 words", 0.9, 0, 1)
    other = turn(2, "I adopted a cat named Miso", 0.5, 3)
    new = turn(3, "My weekly word count target is now 800 words", 0.4, 20)
    assert latest_first([old, other, new]) == [new, other, old]
    assert restated([old, other, new]) == {"old"}
    # the same words said again restate nothing; one statement (a fact and its turn) either
    again = turn(4, "Weekly word count target is 500 words", 0.3, 30)
    assert latest_first([old, again]) == [old, again] and not restated([old, again])
    own = turn(1, "My weekly word count target is 500 words a week", 0.2, 9)
    assert not restated([old, own])


def test_packing_takes_the_arranged_order_and_the_budget_still_holds() -> None:
    old = turn(1, "Weekly word count target is 500 words", 0.9, 0)
    new = turn(2, "Weekly word count target is now 800 words", 0.4, 20)
    packed = pack([], [old, new], always=[], budget=100, turn_tokens=100,
                  count=lambda text: len(text.split()),
                  order=lambda ranked: arrange(ranked, latest=True, timeline=False))
    assert packed.recalled == [new, old] and packed.spent <= 100
    plain = pack([], [old, new], always=[], budget=100, turn_tokens=100,
                 count=lambda text: len(text.split()))
    assert plain.recalled == [old, new]


def test_a_timeline_is_rendered_as_one_dated_sequence_and_standing_facts_apart() -> None:
    allergy = fact("c", "Allergic to peanuts", 0.0, 0, 99).memory
    moved = fact("m", "Moved to Porto", 0.9, 10, 7)
    turns = [turn(3, "We started the garden", 0.8, 2), turn(9, "The garden is done", 0.7, 30),
             turn(1, "I live in Lisbon", 0.5, 0)]
    context = Context("ana", "s", "How has my life changed?", None, [], [moved], [],
                      recalled=turns, critical=[allergy], timeline=True, restated=frozenset({1}))
    prompt = context.to_system_prompt()
    facts, sequence = prompt.split("\n\n")[1:3]
    assert facts.splitlines()[1:] == ["- [2024-03-08] Allergic to peanuts"]
    assert sequence.splitlines()[1:] == [
        "- [2024-03-08, restated later] user: I live in Lisbon",
        "- [2024-03-10] user: We started the garden",
        "- [2024-03-18] Moved to Porto",
        "- [2024-04-07] user: The garden is done"]
