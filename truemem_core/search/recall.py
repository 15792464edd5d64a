"""Conversation recall: the user's past messages, ranked by the same hybrid search
as memories, less the trigram channel.

Every message of both roles is searchable: by words as soon as it is stored
(migration 0008 indexes it), and by meaning once its background job has
embedded it. Messages are long and many, so fuzzy matching every word of them
(the trigram channel) cost more than all the other channels together; the
keyword channel takes its weight instead (``weight_keyword + weight_trigram``),
keeping the lexical share of the vote that memories have. Measured on the first two
LoCoMo dev conversations this served the same evidence (78.0 % against 78.2 %)
at a fraction of the cost; a misspelt word finds memories, not past turns.

The last ``recent_messages`` of the current session are left out: the context
already carries them verbatim. Earlier messages of that
session, and every other session, are in.

A recalled turn is served as its first ``recall_turn_tokens`` tokens
(``conversation.packing``), so the search reads only the head of each:
``HEAD_CHARS_PER_TOKEN`` characters per token of that setting (4,800 by default;
English runs about four a token). A history of 100,000-character messages then
costs a context what a history of short ones does, not megabytes read and
decoded on the loop that serves every user.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, literal
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.records import RecalledTurn
from truemem_core.search import hybrid
from truemem_core.search.channels import Channels, past_turns_of
from truemem_core.search.filters import Mode
from truemem_core.settings import Settings
from truemem_core.storage.schema import messages

HEAD_CHARS_PER_TOKEN = 32


@cache
def _turn_columns(turn_tokens: int) -> tuple[ColumnElement[Any], ...]:
    """A recalled turn's columns, its content read up to its head (see above)."""
    head = func.substr(messages.c.content, 1, literal(turn_tokens * HEAD_CHARS_PER_TOKEN))
    return (messages.c.id, messages.c.session_id, messages.c.role, head.label("content"),
            messages.c.created_at, messages.c.tokens)


async def recall(
    conn: AsyncConnection,
    channels: Channels,
    user_id: str,
    session_id: str,
    query: str,
    vector: Vector | Awaitable[Vector],
    settings: Settings,
    *,
    mode: Mode = "hybrid",
) -> list[RecalledTurn]:
    """The ``recall_k`` past turns that best match ``query``, best first (by every
    channel, or by the one ``mode`` names: the second hop's is ``keyword``)."""
    corpus = past_turns_of(user_id, session_id, settings.recent_messages)
    lexical = settings.replace(weight_keyword=settings.weight_keyword + settings.weight_trigram,
                               weight_trigram=0.0)
    hits = await hybrid.run(conn, channels, corpus, query, vector, k=settings.recall_k,
                            mode=mode, settings=lexical,
                            columns=_turn_columns(settings.recall_turn_tokens))
    return [RecalledTurn(hit.row.id, hit.row.session_id, hit.row.role, hit.row.content,
                         hit.row.created_at, hit.score, hit.row.tokens, hit.scores, hit.ranks)
            for hit in hits]


async def store_embeddings(
    conn: AsyncConnection, user_id: str, ids: Sequence[int], vectors: Vector, model_name: str
) -> None:
    """Make messages recallable by meaning: store their vectors (made by ``model_name``),
    in one batch."""
    if len(ids):
        await conn.execute(
            messages.update()
            .where(messages.c.user_id == user_id, messages.c.id == bindparam("message_id"))
            .values(embedding=bindparam("vector"), embedding_model=model_name),
            [{"message_id": i, "vector": v} for i, v in zip(ids, vectors, strict=True)])
