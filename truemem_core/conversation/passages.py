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
tokens twice when two passages side by side are served (the budget merges adjacent passages of
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings.protocol import Vector
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


def is_long(tokens: int, settings: Settings) -> bool:
    """Whether a message of ``tokens`` is cut into passages: a context would serve it cut
    short (it is longer than ``recall_turn_tokens``), and passages are on
    (``passage_tokens`` > 0)."""
    return settings.passage_tokens > 0 and tokens > settings.recall_turn_tokens


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


async def embed_messages(
    said: Sequence[tuple[str, int]], settings: Settings,
    embed: Callable[[list[str]], Awaitable[Vector]],
) -> tuple[Vector, list[list[Passage]], Vector]:
    """For each (content, tokens) of ``said``: its vector and its passages (none for a
    short message), then the passages' vectors, in order, all made by one ``embed`` call.

    A long message is searched by its passages, so its own vector (which conversation
    recall does not read) is the mean of theirs, normalised: a second pass of the model
    over its first 256 tokens would cost ingest a quarter more for nothing. Messages are
    cut in a thread, so a long one never holds up other users' calls."""
    def cut_all() -> list[list[Passage]]:
        return [cut(text, tokens, settings.passage_tokens)
                if is_long(tokens, settings) else [] for text, tokens in said]

    parts = await asyncio.to_thread(cut_all) if any(
        is_long(tokens, settings) for _, tokens in said) else [[]] * len(said)
    whole = [text for (text, _), mine in zip(said, parts, strict=True) if not mine]
    vectors = await embed(whole + [part.content for mine in parts for part in mine])
    passage_vectors = vectors[len(whole):]
    rows, next_whole, next_part = [], 0, 0
    for mine in parts:
        if mine:
            mean = passage_vectors[next_part:next_part + len(mine)].mean(axis=0)
            rows.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
            next_part += len(mine)
        else:
            rows.append(vectors[next_whole])
            next_whole += 1
    dimension = vectors.shape[1] if len(vectors) else 0
    message_vectors = np.asarray(rows, dtype=np.float32).reshape(len(said), dimension)
    return message_vectors, parts, passage_vectors


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

