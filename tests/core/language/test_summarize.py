"""The extractive summariser used when no LLM is configured."""

from __future__ import annotations

import pytest

from truemem_core.language import summarize_extractive

TRIP = [
    ("user", "Hi!"),
    ("assistant", "Hello! How can I help you today?"),
    ("user", "I am planning a trip to Japan in April with my wife. We land in Tokyo on the 3rd."),
    ("assistant", "Great choice! April is cherry blossom season. Would you like an itinerary?"),
    ("user", "Yes please. Also I am vegetarian, so restaurants matter."),
    ("assistant", "Sure. Kyoto has many shojin ryori temples serving vegetarian food."),
    ("user", "Thanks!"),
    ("assistant", "You're welcome!"),
]


def lines(summary: str) -> list[str]:
    return summary.splitlines()


def test_keeps_informative_sentences_and_drops_filler() -> None:
    summary = summarize_extractive(None, TRIP)
    assert "User: I am planning a trip to Japan in April with my wife." in lines(summary)
    assert "User: Also I am vegetarian, so restaurants matter." in lines(summary)
    for filler in ("Hi!", "Thanks!", "You're welcome!", "Yes please.", "How can I help"):
        assert filler not in summary


def test_chronological_order_is_kept() -> None:
    summary = summarize_extractive(None, TRIP, max_sentences=3)
    kept = [line.split(": ", 1)[1] for line in lines(summary)]
    positions = [" ".join(c for _, c in TRIP).index(sentence) for sentence in kept]
    assert positions == sorted(positions)


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 12])
def test_length_is_bounded(limit: int) -> None:
    previous = "\n".join(f"User: I have fact number {i} about my life." for i in range(20))
    summary = summarize_extractive(previous, TRIP, max_sentences=limit)
    assert 1 <= len(lines(summary)) <= limit


def test_previous_summary_is_kept_first() -> None:
    previous = "User: My name is Ana.\nAssistant: Suggested Python for the data task."
    summary = summarize_extractive(previous, TRIP, max_sentences=6)
    assert lines(summary)[:2] == [
        "User: My name is Ana.",
        "Assistant: Suggested Python for the data task.",
    ]


def test_new_messages_get_room_even_when_the_previous_summary_is_full() -> None:
    previous = "\n".join(f"User: I have fact number {i} about my life." for i in range(12))
    summary = summarize_extractive(previous, TRIP, max_sentences=12)
    assert sum(line.startswith("User: I have fact") for line in lines(summary)) == 8
    assert "User: Also I am vegetarian, so restaurants matter." in lines(summary)


def test_prose_previous_summary_is_split_into_sentences() -> None:
    previous = "The user is called Ana. She works on a memory service at Acme."
    summary = summarize_extractive(previous, [], max_sentences=5)
    assert lines(summary) == ["The user is called Ana.", "She works on a memory service at Acme."]


def test_first_person_facts_outrank_chatter() -> None:
    messages = [
        ("assistant", "There are many interesting options to consider for the weekend."),
        ("user", "I'm allergic to peanuts."),
    ]
    assert summarize_extractive(None, messages, max_sentences=1) == "User: I'm allergic to peanuts."


def test_repeated_sentences_appear_once() -> None:
    previous = "User: I live in Berlin."
    summary = summarize_extractive(previous, [("user", "I live in Berlin.")])
    assert lines(summary) == ["User: I live in Berlin."]


def test_is_deterministic() -> None:
    assert summarize_extractive("User: I like tea.", TRIP) == summarize_extractive(
        "User: I like tea.", TRIP
    )


def test_long_sentences_are_clipped() -> None:
    sentence = "My grandmother " + "told stories about the harbour " * 40 + "and the war."
    summary = summarize_extractive(None, [("user", sentence)])
    assert len(summary) < 320
    assert summary.endswith("…")


def test_japanese_keeps_its_words_sentence_by_sentence() -> None:
    """No space after 。 and none between words: sentences split at 。！？, and a clipped
    one keeps its text, not just what came before its first space."""
    said = ("1: 来月は母と一緒に京都へ旅行に行く予定で、ホテルはもう予約しました。" +
            "私は菜食主義者なので、お寺の精進料理を食べてみたいです。" * 8)
    summary = summarize_extractive(None, [("user", said)])
    assert "精進料理" in summary and "京都" in summary
    assert all(len(line) < 320 for line in lines(summary))
    unbroken = "2: " + "私は毎朝早く起きて公園を走ってから会社に行きます" * 20  # one sentence
    [clipped] = lines(summarize_extractive(None, [("user", unbroken)]))
    assert clipped.endswith("…") and 250 < len(clipped) < 320


def test_nothing_to_summarise_gives_an_empty_summary() -> None:
    assert summarize_extractive(None, [("user", "ok"), ("assistant", "Thanks!")]) == ""


def test_rejects_a_zero_budget() -> None:
    with pytest.raises(ValueError, match="max_sentences"):
        summarize_extractive(None, TRIP, max_sentences=0)
