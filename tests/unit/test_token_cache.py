"""``CachedCounter``: the same counts as the counter it wraps; only short texts kept."""

from __future__ import annotations

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
