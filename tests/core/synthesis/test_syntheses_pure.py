"""Syntheses without I/O: the extractive synthesis keeps each message's key sentence
and names exactly those messages; the LLM's answer is read strictly (a point citing no
message it was shown is dropped); a served synthesis costs its line in the one budget
and stands for the turns it cites."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from truemem_core.conversation.packing import pack
from truemem_core.records import (
    RecalledTurn,
    ScoredSynthesis,
    Synthesis,
    synthesis_line,
    turn_line,
)
from truemem_core.synthesis.extractive import Said, synthesize
from truemem_core.synthesis.written import parse

NOW = datetime(2024, 3, 8, tzinfo=UTC)


def words(text: str) -> int:
    return len(text.split())


def said(n: int, text: str, days: int = 0) -> Said:
    return Said(n, text, NOW + timedelta(days=days))


def test_each_message_offers_its_key_sentence_and_only_those_kept_are_sources() -> None:
    drawn = synthesize([
        said(1, "Hi there! I adopted a greyhound named Pixel from the shelter in Leeds."),
        said(2, "Thanks, ok."),
        said(3, "Pixel sleeps 18 hours a day. Is that normal?", days=2),
    ])
    assert drawn.text == ("I adopted a greyhound named Pixel from the shelter in Leeds. "
                          "Pixel sleeps 18 hours a day.")
    assert drawn.message_ids == [1, 3]
    assert (drawn.first_at, drawn.last_at) == (NOW, NOW + timedelta(days=2))


def test_the_best_sentences_that_fit_are_kept_in_the_order_they_were_said() -> None:
    messages = [said(n, f"I visited the museum number {n} in Porto with my sister Rita.")
                for n in range(1, 30)]
    drawn = synthesize(messages, most_chars=200)
    assert len(drawn.text) <= 200 and len(drawn.message_ids) == 3
    assert drawn.message_ids == sorted(drawn.message_ids)
    assert synthesize([said(1, "ok thanks"), said(2, "hello")]).text == ""


def test_the_llm_answer_is_read_strictly_and_its_points_cite_what_they_come_from() -> None:
    shown = [said(10, "I started a budget app in Flask."),
             said(11, "Queries got slow so I moved to PostgreSQL.", days=1),
             said(12, "Unrelated chit-chat.", days=2)]
    answer = json.dumps({"points": [
        {"text": "Moved the app to PostgreSQL after slow queries", "sources": [2]},
        {"text": "Started a budget app in Flask", "sources": [1, 9]},  # 9 was never shown
        {"text": "Invented without a source", "sources": []},
        {"text": 42, "sources": [3]},
    ]})
    drawn = parse(f"```json\n{answer}\n```", shown)
    assert drawn is not None
    assert drawn.text == ("Started a budget app in Flask. "
                          "Moved the app to PostgreSQL after slow queries.")
    assert drawn.message_ids == [10, 11]  # 12 is cited by no kept point
    assert parse("I could not summarise this.", shown) is None
    assert parse(json.dumps({"points": [{"text": "x", "sources": [7]}]}), shown) is None


def _synthesis(text: str, message_ids: list[int]) -> Synthesis:
    return Synthesis("s1", "ana", "session", "garden", 0, text, message_ids, [], NOW,
                     NOW + timedelta(days=1), NOW, NOW)


def test_a_served_synthesis_costs_its_line_and_stands_for_the_turns_it_cites() -> None:
    summary = ScoredSynthesis(_synthesis("Planted tomatoes. Built raised beds.", [1, 2]), 0.9)
    turns = [RecalledTurn(1, "garden", "user", "I planted tomatoes", NOW, 0.8, 3),
             RecalledTurn(3, "garden", "user", "The slugs came back", NOW, 0.7, 4)]
    packed = pack([], turns, always=[], budget=100, turn_tokens=100, count=words,
                  syntheses=[summary])
    assert packed.syntheses == [summary]
    assert [t.message_id for t in packed.recalled] == [3]  # turn 1 is in the synthesis
    assert packed.spent == words(synthesis_line(summary.synthesis) + "\n") + words(
        turn_line(turns[1]) + "\n")
    assert synthesis_line(summary.synthesis) == (
        "- [2024-03-08 to 2024-03-09] Planted tomatoes. Built raised beds.")
    longer = ScoredSynthesis(_synthesis("Planted tomatoes. " * 10, [1, 2]), 0.9)
    tight = pack([], turns, always=[], budget=13, turn_tokens=100, count=words,
                 syntheses=[longer])  # the synthesis does not fit: the turns do
    assert tight.syntheses == [] and [t.message_id for t in tight.recalled] == [1, 3]


def test_syntheses_take_at_most_half_the_budget() -> None:
    first = ScoredSynthesis(_synthesis("Planted tomatoes. Built raised beds.", [1]), 0.9)
    second = ScoredSynthesis(_synthesis("Sold the boat. Bought a kayak.", [2]), 0.8)
    turns = [RecalledTurn(3, "garden", "user", "The slugs came back", NOW, 0.1, 4)]
    packed = pack([], turns, always=[], budget=20, turn_tokens=100, count=words,
                  syntheses=[first, second])  # 9 and 10 of the half's 10
    assert packed.syntheses == [first] and [t.message_id for t in packed.recalled] == [3]
    roomy = pack([], turns, always=[], budget=40, turn_tokens=100, count=words,
                 syntheses=[first, second])
    assert roomy.syntheses == [first, second]
