"""Conversation recall: past turns of the user, found by meaning.

Messages are embedded in the background (by the extraction job), so a
question about something said weeks ago can find the turn itself even when
no fact was extracted from it. The current session is left out: its recent
turns are already in the context verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.records import RecalledTurn
from truemem_core.search.channels import Channels
from truemem_core.storage.schema import messages

_COLUMNS = (messages.c.id, messages.c.session_id, messages.c.role, messages.c.content,
            messages.c.created_at, messages.c.tokens)


async def recall(
    conn: AsyncConnection,
    channels: Channels,
    user_id: str,
    session_id: str,
    query: Vector,
    *,
    k: int,
    token_budget: int,
    min_score: float,
) -> list[RecalledTurn]:
    """Best past turns above ``min_score``, best first, within ``token_budget`` tokens."""
    hits = [(i, s) for i, s in await channels.nearest_turns(conn, user_id, session_id, query, k)
            if s >= min_score]
    if not hits:
        return []
    rows = {row.id: row for row in await conn.execute(
        select(*_COLUMNS).where(messages.c.user_id == user_id,
                                messages.c.id.in_([i for i, _ in hits])))}
    turns, spent = [], 0
    for message_id, score in hits:
        row = rows[message_id]
        if spent + row.tokens > token_budget:
            continue
        spent += row.tokens
        turns.append(RecalledTurn(row.id, row.session_id, row.role, row.content,
                                  row.created_at, score, row.tokens))
    return turns


async def store_embeddings(
    conn: AsyncConnection, user_id: str, ids: Sequence[int], vectors: Vector
) -> None:
    """Make messages recallable: store their vectors, in one batch."""
    if len(ids):
        await conn.execute(
            messages.update()
            .where(messages.c.user_id == user_id, messages.c.id == bindparam("message_id"))
            .values(embedding=bindparam("vector")),
            [{"message_id": i, "vector": v} for i, v in zip(ids, vectors, strict=True)])
