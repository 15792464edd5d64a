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
memories are in every context whatever the budget; they only stand for their
source turns.

An item costs its line in the system prompt, line break included: the prompt's own
count then finds those lines counted already (``CachedCounter.count_lines``).

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

from truemem_core.records import Memory, RecalledTurn, ScoredMemory, fact_line, turn_line

_GAP = "…"


@dataclass(frozen=True, slots=True)
class Packed:
    memories: list[ScoredMemory]
    recalled: list[RecalledTurn]
    spent: int


def pack(
    hits: Sequence[ScoredMemory],
    turns: Sequence[RecalledTurn],
    *,
    always: Iterable[Memory],
    budget: int,
    turn_tokens: int,
    count: Callable[[str], int],
) -> Packed:
    """The best facts and turns that fit ``budget`` tokens, each list best first."""
    present = {m.id for m in always}
    stood_for = {m.source_message_id for m in always if m.source_message_id is not None}
    told: set[int] = set()  # turns served whole: they say what was extracted from them
    ranked: list[ScoredMemory | RecalledTurn] = sorted(
        [*hits, *turns], key=lambda item: -item.score)
    memories: list[ScoredMemory] = []
    recalled: list[RecalledTurn] = []
    spent = 0
    parts: dict[int, _Parts] = {}  # message id -> its passages served so far
    for item in ranked:
        if isinstance(item, ScoredMemory):
            memory = item.memory
            if memory.id in present or memory.source_message_id in told:
                continue
            cost = count(fact_line(memory) + "\n")
        elif item.passages:
            served = parts.get(item.message_id)
            pieces = {**(served.pieces if served else {}),
                      **dict.fromkeys(item.passages, excerpt(item, turn_tokens, count).content)}
            merged = _merged(served.turn if served else item, pieces, count)
            line = count(turn_line(merged) + "\n")
            cost = line - (served.cost if served else 0)
            if spent + cost > budget:
                continue
            spent += cost
            parts[item.message_id] = _Parts(merged, pieces, line,
                                            served.index if served else len(recalled))
            if served:
                recalled[served.index] = merged
            else:
                recalled.append(merged)
            continue
        else:
            if item.message_id in stood_for:
                continue
            whole, item = item, excerpt(item, turn_tokens, count)
            cost = count(turn_line(item) + "\n")
        if spent + cost > budget:
            continue
        spent += cost
        if isinstance(item, ScoredMemory):
            memories.append(item)
            present.add(item.memory.id)
            if item.memory.source_message_id is not None:
                stood_for.add(item.memory.source_message_id)
        else:
            recalled.append(item)
            if item is whole:
                told.add(item.message_id)
    return Packed(memories, recalled, spent)


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
