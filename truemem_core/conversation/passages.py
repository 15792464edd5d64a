"""Passages: a long message cut into parts that recall finds and serves one by one.

A context serves a past turn of at most ``recall_turn_tokens`` tokens; a longer
message (an assistant's essay, a pasted document) used to be served as its head, and
found by the words and meaning of that head, so an answer stated further on was out
of reach. Such a message is cut into passages of at most ``passage_tokens`` tokens,
each searched (words and meaning) and served on its own, with its message's id, role
and date (``search.recall``, ``conversation.packing``).

Where a message is cut: at paragraph breaks, line breaks (list items, code lines)
and sentence ends, never inside a sentence unless one sentence alone is longer than a
passage (then at a word). Sentences are packed greedily; a passage already half full
ends at a paragraph break rather than run into the next paragraph. Passages do not
overlap: an answer rarely straddles a sentence boundary, and overlap would spend
tokens twice when two neighbours are served (the budget merges adjacent passages of
one message instead, ``packing``).

Sizes are measured in the message's own characters per token (``tokens`` was
counted when it was recorded), so cutting costs no tokenizer: a passage's
``tokens`` is that estimate, and the budget counts what it serves exactly.

Passages are derived data, written by the background job that embeds their message
(``jobs.handlers``) and rebuilt by an import, never exported.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.settings import Settings
from truemem_core.storage.schema import messages, passages

# a break after a sentence end (with its closing quotes or brackets), or a line break
_BREAKS = re.compile(r"(?<=[.!?…:;])[\"'”’)\]*_]*[ \t]+(?=\S)|\n+")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True, slots=True)
class Passage:
    """A part of a message: its place (``ordinal``; ``start``, a character offset into
    the message) and its text."""

    ordinal: int
    start: int
    content: str
    tokens: int


def is_long(tokens: int, served_whole: int) -> bool:
    """Whether a message of ``tokens`` is cut into passages: a context would serve it cut
    short (it is longer than ``recall_turn_tokens``)."""
    return tokens > served_whole


def cut(text: str, tokens: int, size: int) -> list[Passage]:
    """``text`` (``tokens`` long) in passages of at most ``size`` tokens, in order."""
    per_token = len(text) / max(tokens, 1)
    most = max(int(size * per_token), 1)  # characters
    spans = _sentences(text, most)
    found: list[tuple[int, int]] = []
    begin = end = spans[0][0] if spans else 0
    for start, stop in spans:
        paragraph_ends = bool(_PARAGRAPH.search(text, end, start + 1)) if end < start else False
        if end > begin and (stop - begin > most or (paragraph_ends and end - begin >= most // 2)):
            found.append((begin, end))
            begin = start
        end = stop
    if end > begin:
        found.append((begin, end))
    return [Passage(n, start, text[start:stop], max(1, round((stop - start) / per_token)))
            for n, (start, stop) in enumerate(found)]


def _sentences(text: str, most: int) -> list[tuple[int, int]]:
    """(start, stop) of each sentence or line, without the space around it; one longer
    than ``most`` characters in pieces cut at words."""
    spans: list[tuple[int, int]] = []
    position = 0
    for brk in [*_BREAKS.finditer(text), None]:
        stop = len(text) if brk is None else brk.start()
        piece = text[position:stop]
        start = position + len(piece) - len(piece.lstrip())
        stop = position + len(piece.rstrip())
        while stop - start > most:  # a sentence longer than a passage: cut at a word
            cut_at = text.rfind(" ", start + 1, start + most + 1)
            cut_at = start + most if cut_at <= start else cut_at
            spans.append((start, cut_at))
            start = cut_at + (text[cut_at:cut_at + 1] == " ")
        if stop > start:
            spans.append((start, stop))
        if brk is not None:
            position = brk.end()
    return spans


async def of_messages(
    found: Sequence[Any], settings: Settings
) -> list[tuple[Any, list[Passage]]]:
    """(message, its passages) for each long one of ``found`` (anything with ``content``
    and ``tokens``); cut in a thread, so a long message never holds up other users'
    calls."""
    long = [m for m in found if is_long(m.tokens, settings.recall_turn_tokens)]
    if not long:
        return []
    return await asyncio.to_thread(
        lambda: [(m, cut(m.content, m.tokens, settings.passage_tokens)) for m in long])


async def store(
    conn: AsyncConnection, user_id: str, cuts: Sequence[tuple[Any, Sequence[Passage]]],
    vectors: Any, model_name: str,
) -> None:
    """Write the passages of each (message, passages) of ``cuts`` with their vectors (in
    order), replacing any the message had; a message deleted meanwhile gets none (read
    in the transaction: on SQLite writers take turns, on PostgreSQL the foreign key
    waits for a concurrent delete)."""
    wanted = [message.id for message, parts in cuts if parts]
    if not wanted:
        return
    present = {row.id: row.session_id for row in await conn.execute(
        select(messages.c.id, messages.c.session_id).where(
            messages.c.user_id == user_id, messages.c.id.in_(wanted)))}
    await conn.execute(passages.delete().where(passages.c.user_id == user_id,
                                               passages.c.message_id.in_(wanted)))
    rows = []
    embeddings = iter(vectors)
    for message, parts in cuts:
        for part in parts:
            vector = next(embeddings)
            if message.id in present:
                rows.append({
                    "user_id": user_id, "message_id": message.id,
                    "session_id": present[message.id], "role": message.role,
                    "created_at": message.created_at, "ordinal": part.ordinal,
                    "start": part.start, "content": part.content, "tokens": part.tokens,
                    "embedding": vector, "embedding_model": model_name})
    if rows:
        await conn.execute(passages.insert(), rows)

