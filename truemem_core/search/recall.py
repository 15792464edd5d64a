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

A message longer than ``recall_turn_tokens`` is searched by its passages
(``conversation.passages``) once its background job has cut them: each passage is
ranked on its own by the same channels, and a hit is served as that passage with its
message's id, session, role and date (``RecalledTurn.passages`` says which part). Short
messages and passages are two corpora, each ranked by the same fusion with the same
constant and weights, so their scores are on one scale (as facts' and turns' are in
the budget): the two rankings are merged by score into one, and its ``recall_k`` best
are the candidates. A message is in one corpus or the other, never both: searched
whole until its passages exist, by them after. Tried on BEAM 100K dev chats and left
out: fusing the two corpora's candidates again over one ranking per channel (raw
cosine and BM25 in one order) served less (66.2 % against 68.1 % on four chats), and
``recall_k`` candidates of each corpus served no more than ``recall_k`` in all.

A message served whole is at most ``recall_turn_tokens`` long, save one recorded
before its passages were made (or by a version without them), which is served as its
first ``recall_turn_tokens`` tokens (``conversation.packing``), so the search reads
only the head of each: ``HEAD_CHARS_PER_TOKEN`` characters per token of that setting
(4,800 by default; English runs about four a token). A history of 100,000-character
messages then costs a context what a history of short ones does, not megabytes read
and decoded on the loop that serves every user.
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
from truemem_core.search.channels import Channels, past_passages_of, past_turns_of
from truemem_core.search.filters import Mode
from truemem_core.search.fusion import Fused
from truemem_core.settings import Settings
from truemem_core.storage.schema import messages, passages

_PASSAGE_COLUMNS = (passages.c.id, passages.c.message_id, passages.c.session_id,
                    passages.c.role, passages.c.content, passages.c.created_at,
                    passages.c.tokens, passages.c.ordinal)

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
    speaker: str | None = None,
) -> list[RecalledTurn]:
    """The ``recall_k`` past turns (whole messages or passages of long ones) that best
    match ``query``, best first (by every channel, or by the one ``mode`` names: the
    second hop's is ``keyword``). Given the ``speaker`` whose words the query asks about
    (``language.speaker``), the other role's turns weigh ``weight_other_speaker``."""
    lexical = settings.replace(weight_keyword=settings.weight_keyword + settings.weight_trigram,
                               weight_trigram=0.0)
    k, recent = settings.recall_k, settings.recent_messages
    approximate = not settings.exact_recall
    whole = await hybrid.run(conn, channels, past_turns_of(user_id, session_id, recent), query,
                             vector, k=k, mode=mode, settings=lexical,
                             columns=_turn_columns(settings.recall_turn_tokens),
                             approximate=approximate)
    parts = await hybrid.run(conn, channels, past_passages_of(user_id, session_id, recent),
                             query, vector, k=k, mode=mode, settings=lexical,
                             columns=_PASSAGE_COLUMNS, approximate=approximate)
    other = settings.weight_other_speaker
    turns = [_turn(hit, part, 1.0 if speaker in (None, hit.row.role) else other)
             for hit, part in [*((hit, False) for hit in whole), *((hit, True) for hit in parts)]]
    # stable: ties keep whole turns first
    return sorted(turns, key=lambda turn: -turn.score)[:k]


def _turn(hit: Fused, part: bool, weight: float) -> RecalledTurn:
    row = hit.row
    return RecalledTurn(row.message_id if part else row.id, row.session_id, row.role,
                        row.content, row.created_at, hit.score * weight, row.tokens,
                        hit.scores, hit.ranks, (row.ordinal,) if part else ())


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
