"""Syntheses in the database: read a session's stretches, save, forget, list, search,
export and import (SQL only; each function runs in the caller's transaction)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_id, check_text, parse_time
from truemem_core.embeddings import Vector
from truemem_core.records import ScoredSynthesis, Synthesis
from truemem_core.search import hybrid
from truemem_core.search.channels import Channels, syntheses_of
from truemem_core.settings import Settings
from truemem_core.storage.schema import messages, syntheses, utcnow
from truemem_core.synthesis.extractive import PART_MESSAGES, READ_CHARS, Drawn, Said

SESSION = "session"
SERVED_K = 3
"""Syntheses a context's search offers the budget: each stands for a stretch of five user
messages, and more would crowd out the facts and turns a precise question needs."""
KINDS = (SESSION,)
_COLUMNS = [c for c in syntheses.c if c.name not in ("embedding", "embedding_model")]


def _synthesis(row: Any) -> Synthesis:
    return Synthesis(row.id, row.user_id, row.kind, row.key, row.part, row.text,
                     [int(i) for i in row.message_ids], [str(i) for i in row.memory_ids],
                     row.first_at, row.last_at, row.created_at, row.updated_at)


async def parts(conn: AsyncConnection, user_id: str, session_id: str) -> list[list[int]]:
    """The ids of the session's user messages by stretches of ``PART_MESSAGES``, in order
    (ids only: what a synthesis job reads of a whole session)."""
    ids = list(await conn.scalars(
        select(messages.c.id).where(messages.c.user_id == user_id,
                                    messages.c.session_id == session_id,
                                    messages.c.role == "user").order_by(messages.c.id)))
    return [ids[n:n + PART_MESSAGES] for n in range(0, len(ids), PART_MESSAGES)]


async def said(conn: AsyncConnection, user_id: str, ids: Sequence[int]) -> list[Said]:
    """The user's messages ``ids``, in order, each read up to its head."""
    rows = await conn.execute(
        select(messages.c.id, func.substr(messages.c.content, 1, READ_CHARS).label("content"),
               messages.c.created_at)
        .where(messages.c.user_id == user_id, messages.c.id.in_(list(ids)))
        .order_by(messages.c.id))
    return [Said(row.id, row.content, row.created_at) for row in rows]


async def save(
    conn: AsyncConnection, user_id: str, kind: str, key: str, drawn: Drawn,
    vector: Vector | None, model_name: str, memory_ids: Sequence[str] = (), *, part: int = 0,
) -> None:
    """Write the synthesis of (``kind``, ``key``, ``part``), replacing the one there; one
    with no text (nothing worth keeping was said) removes it."""
    mine = (syntheses.c.user_id == user_id, syntheses.c.kind == kind, syntheses.c.key == key,
            syntheses.c.part == part)
    found = (await conn.execute(select(syntheses.c.id).where(*mine))).scalar()
    if not drawn.text or vector is None:
        await conn.execute(syntheses.delete().where(*mine))
        return
    now = utcnow()
    values = {"text": drawn.text, "message_ids": drawn.message_ids,
              "memory_ids": list(memory_ids),
              "first_at": drawn.first_at, "last_at": drawn.last_at, "embedding": vector,
              "embedding_model": model_name, "updated_at": now}
    if found is None:
        await conn.execute(syntheses.insert().values(
            id=str(uuid.uuid4()), user_id=user_id, kind=kind, key=key, part=part,
            created_at=now, **values))
    else:
        await conn.execute(syntheses.update().where(syntheses.c.id == found).values(**values))


async def forget(conn: AsyncConnection, user_id: str, kind: str, keys: Sequence[str]) -> None:
    """Remove the syntheses of ``keys``, every part (e.g. a cleared session's)."""
    await conn.execute(syntheses.delete().where(
        syntheses.c.user_id == user_id, syntheses.c.kind == kind, syntheses.c.key.in_(keys)))


async def listed(conn: AsyncConnection, user_id: str) -> list[Synthesis]:
    """The user's syntheses, the earliest first."""
    rows = await conn.execute(select(*_COLUMNS).where(syntheses.c.user_id == user_id)
                              .order_by(syntheses.c.first_at, syntheses.c.key,
                                        syntheses.c.part))
    return [_synthesis(row) for row in rows]


async def search(
    conn: AsyncConnection, channels: Channels, user_id: str, session_id: str, query: str,
    vector: Vector | Awaitable[Vector], settings: Settings, k: int = SERVED_K,
) -> list[ScoredSynthesis]:
    """The ``k`` syntheses (but ``session_id``'s) that best match ``query``, ranked as past
    turns are (keyword and vector, the keyword channel taking the trigram one's weight;
    no adjacent channel: a synthesis already spans its session)."""
    ranked = settings.replace(weight_keyword=settings.weight_keyword + settings.weight_trigram,
                              weight_trigram=0.0, weight_graph=0.0, weight_adjacent=0.0)
    hits = await hybrid.run(conn, channels, syntheses_of(user_id, session_id), query, vector, k=k,
                            mode="hybrid", settings=ranked, columns=_COLUMNS)
    return [ScoredSynthesis(_synthesis(hit.row), hit.score, hit.scores, hit.ranks)
            for hit in hits]


# -- export and import ------------------------------------------------------------------


def exported(synthesis: Synthesis) -> dict[str, Any]:
    found = synthesis.to_dict()
    del found["user_id"], found["id"]
    return found


async def export_syntheses(conn: AsyncConnection, user_id: str) -> list[dict[str, Any]]:
    return [exported(synthesis) for synthesis in await listed(conn, user_id)]


def parse_syntheses(items: Any, settings: Settings) -> list[dict[str, Any]]:
    """Validate exported syntheses; raises ``InvalidInputError`` or ValueError/KeyError/
    TypeError (a malformed document)."""
    parsed = []
    for item in items or []:
        if item["kind"] not in KINDS:
            raise ValueError(f"a synthesis kind is not one of {KINDS}")
        first, last = item.get("first_at"), item.get("last_at")
        parsed.append({
            "kind": item["kind"],
            "key": check_id(item["key"], "a synthesis key", settings.max_id_chars),
            "part": _part(item.get("part", 0)),
            "text": check_text(item["text"], "a synthesis", settings.max_message_chars,
                               setting="max_message_chars"),
            "message_ids": [int(i) for i in item["message_ids"]],
            "memory_ids": [str(i) for i in item["memory_ids"]],
            "first_at": None if first is None else parse_time(first, "a synthesis's first_at"),
            "last_at": None if last is None else parse_time(last, "a synthesis's last_at"),
        })
    return parsed


async def import_syntheses(
    conn: AsyncConnection, user_id: str, parsed: Sequence[dict[str, Any]], vectors: Any,
    model_name: str, message_ids: Mapping[int, int], memory_ids: Mapping[str, str],
) -> None:
    """Write validated syntheses under ``user_id``, their sources renamed to the imported
    messages' and memories' new ids (a source not imported with them is left out)."""
    for item, vector in zip(parsed, vectors, strict=True):
        said = [message_ids[i] for i in item["message_ids"] if i in message_ids]
        drawn = Drawn(item["text"], said, item["first_at"], item["last_at"])
        await save(conn, user_id, item["kind"], item["key"], drawn, vector, model_name,
                   [memory_ids[i] for i in item["memory_ids"] if i in memory_ids],
                   part=item["part"])


def _part(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("a synthesis part is a whole number >= 0")
    return value
