"""``CachedCounter``: the same counts as the counter it wraps; only short texts kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from truemem_core.embeddings import TiktokenCounter
from truemem_core.embeddings.tokens import CachedCounter


class Tally:
    """A counter that records which texts it was asked to count."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.real = TiktokenCounter()

    def count(self, text: str) -> int:
        self.asked.append(text)
        return self.real.count(text)


def test_counts_are_the_wrapped_counters_and_short_texts_are_counted_once() -> None:
    tally = Tally()
    cached = CachedCounter(tally, entries=2, most_chars=40)
    short, other, third, long = "I live in Porto", "Nice!", "Tell me more", "word " * 20
    for text in (short, short, other, long, long, short):
        assert cached.count(text) == TiktokenCounter().count(text)
    assert tally.asked == [short, other, long, long]  # the long text each time
    cached.count(third)  # the cache holds two texts: the least recently used goes
    cached.count(short)
    cached.count(other)
    assert tally.asked[4:] == [third, other]


# what tiktoken's word splitting treats specially: line breaks, runs of white space,
# punctuation that joins a line break, contractions, digits, other scripts
_PIECES = ["\n", "\n\n", "\r\n", " ", "  ", "\t", "\u3000", "\x1c", "/", ".", "-", "'s", "'",
           "Kyoto", "tea", "X", "12345", "é", "中文", "🙂", "?!"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join),
                max_size=30).map("\n".join))
def test_a_text_counted_line_by_line_has_the_count_of_the_whole(text: str) -> None:
    tiktoken = TiktokenCounter()
    assert CachedCounter(tiktoken, most_chars=40).count_lines(text) == tiktoken.count(text)


def test_only_a_counter_that_adds_up_over_lines_is_asked_for_lines() -> None:
    lines = "\n".join(f"- fact number {n}." for n in range(20))
    tally = Tally()  # a counter of its own: TrueMem cannot know how it splits
    assert CachedCounter(tally).count_lines(lines) == TiktokenCounter().count(lines)
    assert tally.asked == [lines]
    tally.adds_up_over_lines = True  # type: ignore[attr-defined]
    assert CachedCounter(tally).count_lines(lines) == TiktokenCounter().count(lines)
    assert tally.asked[1:] == [f"- fact number {n}.\n" for n in range(19)] + ["- fact number 19."]
