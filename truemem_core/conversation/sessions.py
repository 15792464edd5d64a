"""Short-term memory: sessions, their messages and running summaries (SQL only).

Each function runs in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import bindparam, false, func, select, true
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core._validation import check_id, check_text
from truemem_core.records import ROLES, Message, SessionState
from truemem_core.settings import Settings
from truemem_core.storage.schema import UTCDateTime, messages, sessions, utcnow

_COLUMNS = [c for c in messages.c if c.name != "embedding"]  # vectors stay in the database


class NewMessage(NamedTuple):
    """A validated message to store: ``said_at`` None means now."""

    role: str
    content: str
    tokens: int
    said_at: datetime | None = None


def _message(row: Any) -> Message:
    return Message(row.id, row.role, row.content, row.tokens, row.created_at, row.summarized)


class Appended(NamedTuple):
    ids: list[int]  # the new messages', in order
    unsummarized: int  # tokens of the session not yet folded into its summary, new ones in


async def append(
    conn: AsyncConnection,
    user_id: str,
    session_id: str,
    items: Sequence[NewMessage],
) -> Appended:
    """Insert messages, creating the session; returns their ids and the session's
    unsummarised tokens.

    The session row is an upsert: two calls opening the same new session at once
    both succeed (a look-up then an insert would let one fail on the primary key).
    It reports the tokens already waiting for the summary (its statement cannot see
    the messages inserted beside it). On PostgreSQL both go in one statement, the
    messages as arrays unnested into rows; on SQLite two, the messages as one
    executemany. Either way every statement is the same for any number of messages,
    so SQLAlchemy compiles it once (a multi-row VALUES list is compiled anew on
    every call: it cost record more than the database did).
    """
    now = utcnow()
    values = {"user_id": user_id, "session_id": session_id, "now": now}
    if conn.dialect.name == "postgresql":
        rows = (await conn.execute(_APPEND_PG, {**values, **_columns(items, now)})).all()
        before = int(rows[0].waiting)
        new_ids = [row.id for row in rows]
    else:
        before = int((await conn.execute(_OPEN_SQLITE, values)).scalar_one())
        new_ids = list((await conn.execute(_INSERT_SQLITE, [
            {"user_id": user_id, "session_id": session_id, "role": item.role,
             "content": item.content, "tokens": item.tokens, "summarized": False,
             "created_at": item.said_at or now} for item in items])).scalars())
    # Ids grow in insertion order; RETURNING does not promise its rows' order.
    return Appended(sorted(int(i) for i in new_ids),
                    before + sum(item.tokens for item in items))


def _columns(items: Sequence[NewMessage], now: datetime) -> dict[str, list[Any]]:
    return {"roles": [item.role for item in items],
            "contents": [item.content for item in items],
            "tokens": [item.tokens for item in items],
            "said_at": [item.said_at or now for item in items]}


def _opened(dialect: Any) -> Any:
    """Upsert the session row; RETURNING its tokens not yet folded into the summary."""
    waiting = (select(func.coalesce(func.sum(messages.c.tokens), 0))
               .where(messages.c.user_id == bindparam("user_id"),
                      messages.c.session_id == bindparam("session_id"),
                      messages.c.summarized.is_(False))
               .scalar_subquery().label("waiting"))
    now = bindparam("now", type_=UTCDateTime())
    return (dialect.insert(sessions)
            .values(user_id=bindparam("user_id"), session_id=bindparam("session_id"),
                    summary=None, summarized_through=None, created_at=now, updated_at=now)
            .on_conflict_do_update(index_elements=["user_id", "session_id"],
                                   set_={"updated_at": now})
            .returning(waiting))


def _append_pg() -> Any:
    rows = func.unnest(
        bindparam("roles", type_=ARRAY(messages.c.role.type)),
        bindparam("contents", type_=ARRAY(messages.c.content.type)),
        bindparam("tokens", type_=ARRAY(messages.c.tokens.type)),
        bindparam("said_at", type_=ARRAY(UTCDateTime())),
    ).table_valued("role", "content", "tokens", "said_at").render_derived()
    inserted = messages.insert().from_select(
        ["user_id", "session_id", "role", "content", "tokens", "summarized", "created_at"],
        select(bindparam("user_id", type_=messages.c.user_id.type),
               bindparam("session_id", type_=messages.c.session_id.type),
               rows.c.role, rows.c.content, rows.c.tokens, false(), rows.c.said_at),
    ).returning(messages.c.id)
    session_cte, messages_cte = _opened(postgresql).cte("opened"), inserted.cte("inserted")
    return (select(session_cte.c.waiting, messages_cte.c.id)
            .select_from(session_cte.join(messages_cte, true())))


_APPEND_PG = _append_pg()
_OPEN_SQLITE = _opened(sqlite)
_INSERT_SQLITE = messages.insert().returning(messages.c.id)


async def state(
    conn: AsyncConnection, user_id: str, session_id: str, recent: int
) -> SessionState:
    """The running summary and the last ``recent`` messages, oldest first.

    One statement: the messages carry the session's summary as columns; only a
    session without messages (none yet, or ``recent`` 0) asks for the summary apart.
    """
    params = {"user": user_id, "session": session_id, "recent": recent}
    rows = (await conn.execute(_RECENT, params)).all() if recent > 0 else []
    last = [_message(r) for r in rows][::-1]
    if rows:
        return SessionState(rows[0].session_summary, rows[0].session_summarized_through, last)
    row = (await conn.execute(_SUMMARY, params)).first()
    if row is None:
        return SessionState(None, None, last)
    return SessionState(row.summary, row.summarized_through, last)


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
    for table in (messages, sessions):
        await conn.execute(
            table.delete().where(table.c.user_id == user_id, table.c.session_id == session_id)
        )


async def message(conn: AsyncConnection, user_id: str, message_id: int) -> Message | None:
    row = (await conn.execute(
        select(*_COLUMNS).where(messages.c.user_id == user_id, messages.c.id == message_id)
    )).first()
    return None if row is None else _message(row)


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
                "role": row.role, "content": row.content, "summarized": row.summarized,
                "created_at": row.created_at.isoformat(),
            })
    return list(by_session.values())


def parse_sessions(items: Any, settings: Settings) -> list[dict[str, Any]]:
    """Validate exported sessions; raises ``InvalidInputError`` (bad ids or texts) or
    ValueError/KeyError/TypeError (a malformed document)."""
    parsed = []
    for item in items or []:
        turns = [
            {"role": m["role"],
             "content": check_text(m["content"], "a session message",
                                   settings.max_message_chars, setting="max_message_chars"),
             "summarized": bool(m["summarized"]),
             "created_at": datetime.fromisoformat(m["created_at"])}
            for m in item["messages"]
        ]
        if any(t["role"] not in ROLES for t in turns):
            raise ValueError(f"a message role is not one of {ROLES}")
        summary = item.get("summary")
        parsed.append({
            "session_id": check_id(item["session_id"], "session_id", settings.max_id_chars),
            "summary": None if summary is None else check_text(
                summary, "a session summary", settings.max_message_chars,
                setting="max_message_chars"),
            "created_at": datetime.fromisoformat(item["created_at"]), "messages": turns,
        })
    return parsed


async def import_sessions(
    conn: AsyncConnection, user_id: str, parsed: list[dict[str, Any]], vectors: Any,
    count: Any,
) -> None:
    """Write validated sessions under ``user_id`` (new message ids, same order), with
    ``vectors``: one embedding per message, in order."""
    now = utcnow()
    embeddings = iter(vectors)
    for item in parsed:
        await clear(conn, user_id, item["session_id"])
        ids = []
        for turn in item["messages"]:
            result = await conn.execute(messages.insert().values(
                user_id=user_id, session_id=item["session_id"], role=turn["role"],
                content=turn["content"], tokens=count(turn["content"]),
                summarized=turn["summarized"], created_at=turn["created_at"],
                embedding=next(embeddings)))
            key = result.inserted_primary_key
            assert key is not None
            ids.append(int(key[0]))
        folded = [i for i, t in zip(ids, item["messages"], strict=True) if t["summarized"]]
        await conn.execute(sessions.insert().values(
            user_id=user_id, session_id=item["session_id"], summary=item["summary"],
            summarized_through=max(folded) if folded else None,
            created_at=item["created_at"], updated_at=now))
