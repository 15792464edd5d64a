"""One token budget for what retrieval adds to a context (pure, no I/O).

Retrieved facts and recalled turns compete for ``context_token_budget`` in one
ranking: both come out of Reciprocal Rank Fusion with the same constant and
weights, so their scores are on one scale. Items are taken best first; one that
does not fit is skipped and smaller ones after it may still fit. A fact and
the turn it was extracted from say the same thing, so whichever ranks first is
served and the other is not spent: a served fact stands for its turn, and a turn
served whole for every fact extracted from it. Facts extracted from one turn say
different things and are each served, and a turn served cut short ("…") may have
lost the sentence a fact came from, so it stands for none. Explicit and critical
memories are in every context whatever the budget, and what their lines cost comes
off it first (a standing instruction or allergy is what the model reads before
anything retrieved; ten of them are a few hundred tokens a budget must not hide);
they stand for their source turns.

An item costs its line in the system prompt, line break included: the prompt's own
count then finds those lines counted already (``CachedCounter.count_lines``).

A synthesis (a past session's summary, ``synthesis``) ranks in the same fusion and
costs its line; served, it stands for the turns it cites: their key sentence is in it,
and the budget they would take goes to other sessions' turns. Syntheses take at most
half the budget (``SYNTHESES_SHARE``): a handful of them rank near the top of any
search (their corpus is a few rows), and the rest must stay for the facts and turns
that hold the detail a precise question needs.

A long turn (an assistant's essay, a pasted document) would spend the budget of
several others: it is recalled by its passages (``conversation.passages``), each
served on its own. Passages of one message never overlap, and those of one message
that fit are served as one turn, in the message's order, adjacent ones joined, a gap
marked "…" (and a start past the message's own): the line's date and speaker are paid
once, and the model reads the parts as one text. Each added passage costs what it
adds to that line. A passage says one part of its message, so, like a turn cut short,
it stands for no fact extracted from the message, and a fact does not stand for it; a
message is served whole or by passages, never both (``search.recall`` finds it one
way or the other). A turn recalled whole that is longer than ``turn_tokens`` (one
recorded before its passages were made) is cut to its first ``turn_tokens`` tokens
("…").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from truemem_core.records import (
    Memory,
    RecalledTurn,
    ScoredMemory,
    ScoredSynthesis,
    fact_line,
    synthesis_line,
    turn_line,
)

SYNTHESES_SHARE = 2  # syntheses take at most budget // 2

_GAP = "…"


@dataclass(frozen=True, slots=True)
class Packed:
    memories: list[ScoredMemory]
    recalled: list[RecalledTurn]
    spent: int
    syntheses: list[ScoredSynthesis] = dataclasses.field(default_factory=list)


def pack(
    hits: Sequence[ScoredMemory],
    turns: Sequence[RecalledTurn],
    *,
    always: Iterable[Memory],
    budget: int,
    turn_tokens: int,
    count: Callable[[str], int],
    syntheses: Sequence[ScoredSynthesis] = (),
    order: Callable[[list[ScoredMemory | RecalledTurn]], list[ScoredMemory | RecalledTurn]]
    | None = None,
) -> Packed:
    """The best facts, turns (and syntheses) that fit ``budget`` tokens, each list best
    first. ``order`` is the order to take the facts and turns in instead, given them best
    first (a timeline's): the syntheses, overviews themselves, are then taken first."""
    packing = _Packing(list(always), budget, turn_tokens, count)
    for item in _taking_order(hits, turns, syntheses, order):
        if isinstance(item, ScoredSynthesis):
            packing.synthesis(item)
        elif isinstance(item, ScoredMemory):
            packing.fact(item)
        elif item.passages:
            packing.passages(item)
        else:
            packing.turn(item)
    return Packed(packing.memories, packing.recalled, packing.spent, packing.summaries)


class _Packing:
    """What is packed so far, and what it stands for."""

    def __init__(self, always: list[Memory], budget: int, turn_tokens: int,
                 count: Callable[[str], int]) -> None:
        self.turn_tokens, self.count = turn_tokens, count
        self.budget = budget - sum(count(fact_line(m) + "\n") for m in always)  # theirs first
        self.present = {m.id for m in always}
        self.stood_for = {m.source_message_id for m in always if m.source_message_id is not None}
        self.told: set[int] = set()  # turns served whole: they say what was extracted from them
        self.parts: dict[int, _Parts] = {}  # message id -> its passages served so far
        self.memories: list[ScoredMemory] = []
        self.recalled: list[RecalledTurn] = []
        self.summaries: list[ScoredSynthesis] = []
        self.spent = self.summarised = 0

    def _fits(self, cost: int) -> bool:
        if self.spent + cost > self.budget:
            return False
        self.spent += cost
        return True

    def synthesis(self, item: ScoredSynthesis) -> None:
        cost = self.count(synthesis_line(item.synthesis) + "\n")
        if self.summarised + cost <= self.budget // SYNTHESES_SHARE and self._fits(cost):
            self.summarised += cost
            self.summaries.append(item)
            self.stood_for.update(item.synthesis.message_ids)

    def fact(self, item: ScoredMemory) -> None:
        memory = item.memory
        if memory.id in self.present or memory.source_message_id in self.told:
            return
        if self._fits(self.count(fact_line(memory) + "\n")):
            self.memories.append(item)
            self.present.add(memory.id)
            if memory.source_message_id is not None:
                self.stood_for.add(memory.source_message_id)

    def turn(self, item: RecalledTurn) -> None:
        if item.message_id in self.stood_for:
            return
        served = excerpt(item, self.turn_tokens, self.count)
        if self._fits(self.count(turn_line(served) + "\n")):
            self.recalled.append(served)
            if served is item:
                self.told.add(item.message_id)

    def passages(self, item: RecalledTurn) -> None:
        """A passage joins its message's line (the passages served of it so far)."""
        served = self.parts.get(item.message_id)
        pieces = {**(served.pieces if served else {}), **dict.fromkeys(
            item.passages, excerpt(item, self.turn_tokens, self.count).content)}
        merged = _merged(served.turn if served else item, pieces, self.count)
        line = self.count(turn_line(merged) + "\n")
        if not self._fits(line - (served.cost if served else 0)):
            return
        index = served.index if served else len(self.recalled)
        self.parts[item.message_id] = _Parts(merged, pieces, line, index)
        if served:
            self.recalled[index] = merged
        else:
            self.recalled.append(merged)


def _taking_order(
    hits: Sequence[ScoredMemory],
    turns: Sequence[RecalledTurn],
    syntheses: Sequence[ScoredSynthesis],
    order: Callable[[list[ScoredMemory | RecalledTurn]], list[ScoredMemory | RecalledTurn]]
    | None,
) -> list[ScoredMemory | RecalledTurn | ScoredSynthesis]:
    """Everything found, best first; with ``order``, the syntheses first, then the facts
    and turns as ``order`` lays them out."""
    found: list[ScoredMemory | RecalledTurn] = sorted(
        [*hits, *turns], key=lambda item: -item.score)
    if order is None:
        return sorted([*found, *syntheses], key=lambda item: -item.score)
    return [*sorted(syntheses, key=lambda item: -item.score), *order(found)]


@dataclass(frozen=True, slots=True)
class _Parts:
    turn: RecalledTurn  # as served: the passages joined
    pieces: dict[int, str]  # passage place -> its text
    cost: int  # of the served line
    index: int  # in the recalled list


def _merged(
    turn: RecalledTurn, pieces: dict[int, str], count: Callable[[str], int]
) -> RecalledTurn:
    """``turn`` serving ``pieces`` (passages of its message) in order: adjacent ones
    joined, a gap (or a start past the message's) marked "…"."""
    places = sorted(pieces)
    text = f"{_GAP} " if places[0] > 0 else ""
    for n, place in enumerate(places):
        if n:
            text += " " if place == places[n - 1] + 1 else f" {_GAP} "
        text += pieces[place]
    return dataclasses.replace(turn, content=text, tokens=count(text), passages=tuple(places))


def excerpt(turn: RecalledTurn, most: int, count: Callable[[str], int]) -> RecalledTurn:
    """``turn`` with its content cut to at most ``most`` tokens, at a word, ending in "…".

    ``turn.tokens`` counts the whole message (when it was recorded); its content may be
    the head of it that recall read (``search.recall``): either way only that is counted.
    """
    text = turn.content
    if turn.tokens <= most and count(text) <= most:
        return turn
    # a first cut at the text's own characters per token, shrunk until it fits
    size = len(text) * most // max(count(text), 1)
    while size > 1 and count(text[:size] + " …") > most:
        size = size * 9 // 10
    cut = text[:size].rstrip()
    if " " in cut:
        cut = cut[: cut.rfind(" ")].rstrip()  # at a word: fewer tokens, never more
    cut += " …"
    return dataclasses.replace(turn, content=cut, tokens=count(cut))
