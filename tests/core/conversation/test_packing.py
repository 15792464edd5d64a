"""The one context budget (pure): best first, skip what does not fit, a fact or its
source turn but not both (each fact of a turn, and a turn cut short with its facts),
explicit and critical memories free and never repeated."""

from __future__ import annotations

from datetime import UTC, datetime

from truemem_core.conversation.packing import excerpt, pack
from truemem_core.records import Memory, RecalledTurn, ScoredMemory, fact_line, turn_line

NOW = datetime(2024, 3, 8, tzinfo=UTC)


def fact(memory_id: str, text: str, score: float, source: int | None = None) -> ScoredMemory:
    memory = Memory(memory_id, "ana", text, 3, "semantic", "extracted", "active", 0, NOW, NOW,
                    source_message_id=source)
    return ScoredMemory(memory, score)


def turn(message_id: int, content: str, score: float) -> RecalledTurn:
    return RecalledTurn(message_id, "s", "user", content, NOW, score, len(content.split()))


def words(text: str) -> int:
    return len(text.split())


def test_best_first_and_what_does_not_fit_is_skipped() -> None:
    hits = [fact("a", "one two three four five six", 0.9), fact("b", "one", 0.5)]
    turns = [turn(1, "x " * 20, 0.8), turn(2, "short", 0.1)]
    packed = pack(hits, turns, always=[], budget=15, turn_tokens=100, count=words)
    assert [h.memory.id for h in packed.memories] == ["a", "b"]  # the long turn is skipped
    assert [t.message_id for t in packed.recalled] == [2]
    assert packed.spent == sum(words(fact_line(h.memory) + "\n") for h in packed.memories) + sum(
        words(turn_line(t) + "\n") for t in packed.recalled) == 15


def test_a_fact_and_its_source_turn_are_not_both_spent() -> None:
    first = pack([fact("a", "likes tea", 0.9, source=7)], [turn(7, "I like tea", 0.5)],
                 always=[], budget=100, turn_tokens=100, count=words)
    assert [h.memory.id for h in first.memories] == ["a"] and first.recalled == []
    second = pack([fact("a", "likes tea", 0.4, source=7)], [turn(7, "I like tea", 0.5)],
                  always=[], budget=100, turn_tokens=100, count=words)
    assert second.memories == [] and [t.message_id for t in second.recalled] == [7]


def test_facts_of_one_turn_say_different_things_and_are_each_served() -> None:
    said = [fact("n", "Name is Ana", 0.9, source=1),
            fact("a", "Is allergic to peanuts", 0.6, source=1),
            fact("l", "Lives in Lisbon", 0.5, source=1)]
    packed = pack(said, [turn(1, "My name is Ana. I am allergic to peanuts.", 0.3)],
                  always=[], budget=100, turn_tokens=100, count=words)
    assert [h.memory.id for h in packed.memories] == ["n", "a", "l"]
    assert packed.recalled == []  # the facts stand for their turn


def test_a_turn_cut_short_stands_for_none_of_its_facts() -> None:
    long = turn(1, " ".join(["trains"] * 50) + " I am allergic to peanuts", 0.9)
    allergy = fact("a", "Is allergic to peanuts", 0.5, source=1)
    cut = pack([allergy], [long], always=[], budget=100, turn_tokens=20, count=words)
    assert [t.message_id for t in cut.recalled] == [1] and cut.recalled[0].content.endswith("…")
    assert [h.memory.id for h in cut.memories] == ["a"]
    whole = pack([allergy], [long], always=[], budget=100, turn_tokens=100, count=words)
    assert [t.message_id for t in whole.recalled] == [1] and whole.memories == []


def test_standing_memories_are_free_and_cover_their_source_turn() -> None:
    allergy = fact("c", "allergic to peanuts", 0.9, source=3)
    packed = pack([allergy, fact("d", "lives in Lisbon", 0.2)], [turn(3, "peanuts!", 0.7)],
                  always=[allergy.memory], budget=100, turn_tokens=100, count=words)
    assert [h.memory.id for h in packed.memories] == ["d"] and packed.recalled == []
    assert pack([allergy], [], always=[], budget=0, turn_tokens=100, count=words).memories == []


def test_a_long_turn_is_cut_at_a_word_so_that_more_turns_fit() -> None:
    essay = turn(1, " ".join(f"word{n}" for n in range(300)), 0.9)
    short = turn(2, "the answer is 42", 0.5)
    packed = pack([], [essay, short], always=[], budget=60, turn_tokens=40, count=words)
    assert [t.message_id for t in packed.recalled] == [1, 2]
    cut = packed.recalled[0]
    assert cut.content.endswith(" …") and cut.tokens == words(cut.content) <= 40
    assert essay.content.startswith(cut.content.removesuffix(" …"))
    assert excerpt(short, 40, words) is short
    blob = turn(3, "x" * 5000, 0.1)  # one huge "word": cut by characters
    assert len(excerpt(blob, 10, lambda text: len(text) // 100).content) <= 1100


def passage(message_id: int, place: int, content: str, score: float) -> RecalledTurn:
    return RecalledTurn(message_id, "s", "assistant", content, NOW, score,
                        len(content.split()), passages=(place,))


def test_passages_of_one_message_are_served_as_one_turn_in_its_order() -> None:
    """Adjacent passages join, a gap and a start past the message's are marked; the date
    and speaker are paid once, and nothing of the message is spent twice."""
    found = [passage(9, 3, "the key is under the pot.", 0.9), passage(4, 0, "elsewhere", 0.8),
             passage(9, 2, "By the gate", 0.7), passage(9, 6, "Bring a torch.", 0.6)]
    packed = pack([], found, always=[], budget=100, turn_tokens=100, count=words)
    assert [(t.message_id, t.passages, t.content) for t in packed.recalled] == [
        (9, (2, 3, 6), "… By the gate the key is under the pot. … Bring a torch."),
        (4, (0,), "elsewhere")]
    assert packed.recalled[0].score == 0.9  # its best passage's rank
    assert packed.spent == sum(words(turn_line(t) + "\n") for t in packed.recalled)


def test_a_passage_that_does_not_fit_its_message_turn_is_left_out() -> None:
    found = [passage(9, 0, "one two three", 0.9), passage(9, 1, "four " * 30, 0.8),
             passage(9, 2, "five", 0.7)]
    line = words(turn_line(passage(9, 0, "one two three", 0)) + "\n")
    packed = pack([], found, always=[], budget=line + 2, turn_tokens=100, count=words)
    assert [(t.passages, t.content) for t in packed.recalled] == [
        ((0, 2), "one two three … five")]
    assert packed.spent == words(turn_line(packed.recalled[0]) + "\n") <= line + 2


def test_a_passage_stands_for_no_fact_and_no_fact_for_it() -> None:
    """A passage says one part of its message: the facts extracted from that message are
    served beside it, as beside a turn cut short."""
    packed = pack([fact("a", "likes tea", 0.9, source=7)], [passage(7, 4, "tea at five", 0.5)],
                  always=[], budget=100, turn_tokens=100, count=words)
    assert [h.memory.id for h in packed.memories] == ["a"]
    assert [t.passages for t in packed.recalled] == [(4,)]
