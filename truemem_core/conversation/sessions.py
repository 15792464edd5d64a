"""Short-term memory: sessions, their messages and running summaries (SQL only).

Each function runs in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, exists, func, select, union
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_id, check_text, optional_int, parse_time
from truemem_core.conversation.passages import Passage
from truemem_core.conversation.passages import store as store_passages
from truemem_core.errors import InvalidInputError
from truemem_core.records import ROLES, Message, SessionInfo, SessionState
from truemem_core.settings import Settings
from truemem_core.storage.direct import fetch_all
from truemem_core.storage.schema import messages, passages, sessions, syntheses, utcnow

# vectors stay in the database
_COLUMNS = [c for c in messages.c if c.name not in ("embedding", "embedding_model")]


def _message(row: Any) -> Message:
    return Message(row.id, row.role, row.content, row.tokens, row.created_at, row.summarized)


async def state(
    conn: AsyncConnection, user_id: str, session_id: str, recent: int
) -> SessionState:
    """The running summary and the last ``recent`` messages, oldest first.

    One statement: the messages carry the session's summary as columns; only a
    session without messages (none yet, or ``recent`` 0) asks for the summary apart.
    """
    params = {"user": user_id, "session": session_id, "recent": recent}
    rows = await fetch_all(conn, _RECENT, params) if recent > 0 else []
    last = [_message(r) for r in rows][::-1]
    if rows:
        return SessionState(rows[0].session_summary, rows[0].session_summarized_through, last)
    found = await fetch_all(conn, _SUMMARY, params)
    if not found:
        return SessionState(None, None, last)
    return SessionState(found[0].summary, found[0].summarized_through, last)


# ``state``'s statements, built once (see ``search.channels``)
_OF_SESSION = (sessions.c.user_id == bindparam("user"),
               sessions.c.session_id == bindparam("session"))
_RECENT = (
    select(*_COLUMNS,
           select(sessions.c.summary).where(*_OF_SESSION).scalar_subquery()
           .label("session_summary"),
           select(sessions.c.summarized_through).where(*_OF_SESSION).scalar_subquery()
           .label("session_summarized_through"))
    .where(messages.c.user_id == bindparam("user"), messages.c.session_id == bindparam("session"))
    .order_by(messages.c.id.desc())
    .limit(bindparam("recent")))
_SUMMARY = select(sessions.c.summary, sessions.c.summarized_through).where(*_OF_SESSION)


async def listed(conn: AsyncConnection, user_id: str) -> list[SessionInfo]:
    """The user's sessions, the one with the latest message first."""
    counted = (select(messages.c.session_id, func.count().label("messages"),
                      func.min(messages.c.created_at).label("started_at"),
                      func.max(messages.c.created_at).label("last_at"))
               .where(messages.c.user_id == user_id)
               .group_by(messages.c.session_id).subquery())
    found = await conn.execute(
        select(sessions.c.session_id, sessions.c.summary, sessions.c.created_at,
               sessions.c.updated_at, counted.c.messages, counted.c.started_at,
               counted.c.last_at)
        .outerjoin(counted, counted.c.session_id == sessions.c.session_id)
        .where(sessions.c.user_id == user_id))
    listed = [SessionInfo(row.session_id, row.messages or 0, row.started_at or row.created_at,
                          row.last_at or row.updated_at, row.summary) for row in found]
    return sorted(listed, key=lambda info: (info.last_at, info.session_id), reverse=True)


async def to_fold(
    conn: AsyncConnection, user_id: str, session_id: str, keep_recent: int
) -> list[Message]:
    """Unsummarised messages older than the last ``keep_recent`` of the session."""
    newest = (
        select(messages.c.id)
        .where(messages.c.user_id == user_id, messages.c.session_id == session_id)
        .order_by(messages.c.id.desc())
        .limit(keep_recent)
        .subquery()
    )
    rows = await conn.execute(
        select(*_COLUMNS)
        .where(
            messages.c.user_id == user_id,
            messages.c.session_id == session_id,
            messages.c.summarized.is_(False),
            messages.c.id.not_in(select(newest.c.id)),
        )
        .order_by(messages.c.id)
    )
    return [_message(r) for r in rows]


async def fold(
    conn: AsyncConnection,
    user_id: str,
    session_id: str,
    *,
    expected_through: int | None,
    summary: str,
    message_ids: Sequence[int],
) -> bool:
    """Store a new summary and mark exactly ``message_ids`` summarised.

    Commits only if nobody folded the session since the job read it; returns
    whether it did (a replayed or raced job changes nothing).
    """
    current = await conn.execute(
        select(sessions.c.summarized_through).where(
            sessions.c.user_id == user_id, sessions.c.session_id == session_id)
    )
    row = current.first()
    if row is None or row.summarized_through != expected_through or not message_ids:
        return False
    await conn.execute(
        sessions.update()
        .where(sessions.c.user_id == user_id, sessions.c.session_id == session_id)
        .values(summary=summary, summarized_through=max(message_ids), updated_at=utcnow())
    )
    await conn.execute(
        messages.update()
        .where(messages.c.user_id == user_id, messages.c.id.in_(list(message_ids)))
        .values(summarized=True)
    )
    return True


async def clear(conn: AsyncConnection, user_id: str, session_id: str) -> None:
    # The session's row first: a ``record`` meanwhile (one statement that upserts it, then
    # adds its messages) waits on that row's lock until this commits, then starts the
    # session again. Messages first, it could add its messages between the two deletes
    # and lose its row: messages no listing or export would show. Passages go with their
    # messages (PostgreSQL's foreign key would take them; SQLite enforces none).
    for table in (sessions, passages, messages):
        await conn.execute(
            table.delete().where(table.c.user_id == user_id, table.c.session_id == session_id)
        )
    # its synthesis summarised those messages: it goes with them
    await conn.execute(syntheses.delete().where(
        syntheses.c.user_id == user_id, syntheses.c.kind == "session",
        syntheses.c.key == session_id))


async def message(conn: AsyncConnection, user_id: str, message_id: int) -> Message | None:
    row = (await conn.execute(
        select(*_COLUMNS).where(messages.c.user_id == user_id, messages.c.id == message_id)
    )).first()
    return None if row is None else _message(row)


async def unembedded(
    conn: AsyncConnection, user_id: str, session_id: str, first_id: int, window: int
) -> tuple[bool, list[Message]]:
    """Of the session's ``window`` messages from ``first_id`` on, those with no vector
    yet, in order: what an extraction embeds at once (its own turns and those of the
    jobs after it, ``jobs.handlers``); and whether one of the ``window`` user messages
    before ``first_id`` has none (its job may be embedding them now). At most twice
    ``window`` rows are read, however long the session."""
    session = (messages.c.user_id == user_id, messages.c.session_id == session_id)
    behind = select(messages.c.id).where(
        *session, messages.c.role == "user", messages.c.id < first_id,
    ).order_by(messages.c.id.desc()).limit(window).subquery()
    waiting = await conn.scalar(select(exists().where(
        messages.c.id.in_(select(behind.c.id)), messages.c.embedding.is_(None))))
    rows = await conn.execute(
        select(*_COLUMNS, messages.c.embedding.is_(None).label("todo"))
        .where(*session, messages.c.id >= first_id).order_by(messages.c.id).limit(window))
    return bool(waiting), [_message(row) for row in rows if row.todo]


async def unembedded_of(conn: AsyncConnection, user_id: str, ids: Sequence[int]) -> list[Message]:
    """Those of the messages ``ids`` with no vector yet, in order."""
    rows = await conn.execute(
        select(*_COLUMNS).where(messages.c.user_id == user_id, messages.c.id.in_(list(ids)),
                                messages.c.embedding.is_(None)).order_by(messages.c.id))
    return [_message(row) for row in rows]


async def vector(conn: AsyncConnection, user_id: str, message_id: int) -> Any:
    """The message's stored vector, or None."""
    return (await conn.execute(select(messages.c.embedding).where(
        messages.c.user_id == user_id, messages.c.id == message_id))).scalar()


async def export_sessions(conn: AsyncConnection, user_id: str) -> list[dict[str, Any]]:
    """Every session of the user with its summary and messages, JSON-ready."""
    by_session: dict[str, dict[str, Any]] = {}
    for row in await conn.execute(
        select(sessions).where(sessions.c.user_id == user_id).order_by(sessions.c.created_at)
    ):
        by_session[row.session_id] = {
            "session_id": row.session_id, "summary": row.summary,
            "created_at": row.created_at.isoformat(), "messages": [],
        }
    for row in await conn.execute(
        select(*_COLUMNS).where(messages.c.user_id == user_id).order_by(messages.c.id)
    ):
        if row.session_id in by_session:
            by_session[row.session_id]["messages"].append({
                "id": row.id, "role": row.role, "content": row.content,
                "summarized": row.summarized, "created_at": row.created_at.isoformat(),
            })
    return list(by_session.values())


def parse_sessions(items: Any, settings: Settings) -> list[dict[str, Any]]:
    """Validate exported sessions; raises ``InvalidInputError`` (bad ids or texts) or
    ValueError/KeyError/TypeError (a malformed document)."""
    parsed: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in items or []:
        turns = [
            {"role": m["role"],
             "content": check_text(m["content"], "a session message",
                                   settings.max_message_chars, setting="max_message_chars"),
             "summarized": bool(m["summarized"]),
             "created_at": parse_time(m["created_at"], "a message's created_at"),
             "exported_id": optional_int(m.get("id"), "a message's id")}
            for m in item["messages"]
        ]
        if any(t["role"] not in ROLES for t in turns):
            raise ValueError(f"a message role is not one of {ROLES}")
        summary = item.get("summary")
        session_id = check_id(item["session_id"], "session_id", settings.max_id_chars)
        if session_id in seen:
            raise InvalidInputError(f"session {session_id!r} is there twice")
        seen.add(session_id)
        parsed.append({
            "session_id": session_id,
            "summary": None if summary is None else check_text(
                summary, "a session summary", settings.max_message_chars,
                setting="max_message_chars"),
            "created_at": parse_time(item["created_at"], "created_at"), "messages": turns,
        })
    return parsed


async def import_sessions(
    conn: AsyncConnection, user_id: str, parsed: list[dict[str, Any]], vectors: Any,
    model_name: str, tokens: Sequence[int], cuts: Sequence[Sequence[Passage]],
    passage_vectors: Any,
) -> dict[int, int]:
    """Write validated sessions under ``user_id`` (new message ids, same order), with
    ``vectors``: one embedding per message, in order, made by ``model_name``, and their
    ``tokens``; and each message's passages (``cuts``, in the same order: none for a
    short one) with ``passage_vectors``, in order. Returns each message's new id by its
    exported one. A session the user already has is refused (``InvalidInputError``), not
    merged into or replaced: an import never loses what the user said."""
    wanted = [item["session_id"] for item in parsed]
    taken = wanted and (await conn.execute(union(*(
        select(table.c.session_id).where(table.c.user_id == user_id,
                                         table.c.session_id.in_(wanted))
        for table in (sessions, messages))))).scalars().all()
    if taken:
        raise InvalidInputError(
            f"the user already has session {sorted(taken)[0]!r}: clear_session() it first, "
            "or import under another user")
    now = utcnow()
    embeddings, counts, parts = iter(vectors), iter(tokens), iter(cuts)
    new_ids: dict[int, int] = {}
    written: list[tuple[Message, Sequence[Passage]]] = []
    for item in parsed:
        ids = []
        for turn in item["messages"]:
            count = next(counts)
            result = await conn.execute(messages.insert().values(
                user_id=user_id, session_id=item["session_id"], role=turn["role"],
                content=turn["content"], tokens=count,
                summarized=turn["summarized"], created_at=turn["created_at"],
                embedding=next(embeddings), embedding_model=model_name))
            key = result.inserted_primary_key
            assert key is not None
            ids.append(int(key[0]))
            written.append((Message(ids[-1], turn["role"], turn["content"], count,
                                    turn["created_at"]), next(parts)))
            if turn["exported_id"] is not None:
                new_ids[turn["exported_id"]] = ids[-1]
        folded = [i for i, t in zip(ids, item["messages"], strict=True) if t["summarized"]]
        await conn.execute(sessions.insert().values(
            user_id=user_id, session_id=item["session_id"], summary=item["summary"],
            summarized_through=max(folded) if folded else None,
            created_at=item["created_at"], updated_at=now))
    await store_passages(conn, user_id, written, passage_vectors, model_name)
    return new_ids
