"""A synthesis without an LLM: the user's key sentence of each message of a stretch of a
session (``PART_MESSAGES`` user messages).

Each user message offers its most informative sentence (scored as the running
summary scores them: first-person facts, names, numbers, content words; greetings
and filler never). The best of those that fit ``MOST_CHARS`` are kept, in the order
they were said, so the synthesis reads as the session went. Its sources are exactly
the messages whose sentence it keeps. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from truemem_core.language.summarize import clip, is_filler, score
from truemem_core.language.text import normalise, split_sentences

MOST_CHARS = 800
"""About 200 tokens: a synthesis costs a context what one or two recalled turns do, and
stands for up to a dozen messages."""
MIN_MESSAGES = 3
"""A stretch of fewer user messages gets no synthesis: its turns are as short as one
would be, and a synthesis standing for them would hide their detail."""
PART_MESSAGES = 5
"""A session's syntheses are by stretches of this many user messages (with the replies
between them, about ten turns): each keeps about one key sentence of each of them. One
synthesis of a few lines for a whole day of conversation names its five most
informative sentences, seldom about what a question asks; one per stretch keeps a
topic's sentences together, and a new message rebuilds only the last stretch's, not
the whole session's."""
SENTENCE_CHARS = 160  # one rambling sentence must not take a whole synthesis
READ_CHARS = 4_000  # a message's key sentence is in its head (a paste's tail is not)


class Said(NamedTuple):
    """A user message a synthesis may draw on."""

    id: int
    content: str
    said_at: datetime


class Drawn(NamedTuple):
    text: str
    message_ids: list[int]  # the messages whose words are in ``text``, in order
    first_at: datetime | None
    last_at: datetime | None


def key_sentence(content: str) -> tuple[float, str] | None:
    """The message's most informative sentence and its score (None: only filler)."""
    best: tuple[float, str] | None = None
    for sentence in split_sentences(normalise(content[:READ_CHARS])):
        if is_filler("user", sentence):
            continue
        found = (score("user", sentence), clip(sentence, SENTENCE_CHARS))
        if best is None or found[0] > best[0]:
            best = found
    return best


def drawn(kept: Sequence[tuple[Said, str]]) -> Drawn:
    """The synthesis of ``kept`` (message, its words), in the order they were said."""
    ordered = sorted(kept, key=lambda pair: (pair[0].said_at, pair[0].id))
    return Drawn(" ".join(text for _, text in ordered), [said.id for said, _ in ordered],
                 min((said.said_at for said, _ in ordered), default=None),
                 max((said.said_at for said, _ in ordered), default=None))


def synthesize(messages: Sequence[Said], most_chars: int = MOST_CHARS) -> Drawn:
    """The best key sentences of ``messages`` that fit ``most_chars``, in the order said."""
    offered: list[tuple[float, int, Said, str]] = []
    seen: set[str] = set()
    for position, said in enumerate(messages):
        found = key_sentence(said.content)
        if found is None or (folded := " ".join(found[1].casefold().split())) in seen:
            continue
        seen.add(folded)
        offered.append((found[0], position, said, found[1]))
    kept: list[tuple[Said, str]] = []
    size = 0
    for _, _, said, text in sorted(offered, key=lambda item: (-item[0], item[1])):
        if size + len(text) + 1 > most_chars:
            continue
        size += len(text) + 1
        kept.append((said, text))
    return drawn(kept)
