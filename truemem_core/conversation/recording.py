"""``record``'s write: the session row, the new messages and the jobs they imply.

The jobs are derived in SQL from the new rows (``_jobs``), so on PostgreSQL the whole
write is one statement — data-modifying CTEs — run on its own by psycopg itself
(``storage.direct``): one round trip, no BEGIN or COMMIT, atomic as any statement is.
SQLite has no INSERT inside a CTE; there the same derivation runs as the third
statement of one transaction.

The session row is an upsert: two calls opening the same new session at once both
succeed (a look-up then an insert would let one fail on the primary key).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import (
    JSON,
    FromClause,
    Integer,
    Text,
    bindparam,
    case,
    cast,
    exists,
    false,
    func,
    literal_column,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from truemem_core.storage.direct import fetch_all
from truemem_core.storage.schema import UTCDateTime, jobs, messages, sessions, utcnow

KINDS = ("extract", "maintain", "embed", "summarize", "synthesize")  # the order handed on in


class NewMessage(NamedTuple):
    """A validated message to store: ``said_at`` None means now."""

    role: str
    content: str
    tokens: int
    said_at: datetime | None = None


class Written(NamedTuple):
    ids: list[int]  # the new messages', in order
    jobs: list[str]  # the keys of the jobs queued with them, in ``KINDS`` order


async def write(
    conn: AsyncConnection,
    user_id: str,
    session_id: str,
    items: Sequence[NewMessage],
    *,
    summary_threshold: int,
    maintain_interval_s: float,
) -> Written:
    """Store the messages, creating the session, and queue their jobs.

    On PostgreSQL ``conn`` may be outside a transaction (the write is one statement);
    on SQLite it must be in one.
    """
    now = utcnow()
    values = {"user_id": user_id, "session_id": session_id, "now": now,
              "threshold": summary_threshold,
              "maintained_since": now - timedelta(seconds=maintain_interval_s)}
    if conn.dialect.name == "postgresql":
        rows = await fetch_all(conn, _WRITE_PG, {**values, **_columns(items, now)})
        ids = [row.id for row in rows if row.id is not None]
        keys = [row.key for row in rows if row.key is not None]
    else:
        waiting = int((await conn.execute(_OPEN_SQLITE, values)).scalar_one())
        ids = list((await conn.execute(_INSERT_SQLITE, [
            {"user_id": user_id, "session_id": session_id, "role": item.role,
             "content": item.content, "tokens": item.tokens, "summarized": False,
             "created_at": item.said_at or now} for item in items])).scalars())
        keys = list((await conn.execute(_QUEUE_SQLITE, {
            **values, "waiting": waiting, "first": min(ids), "last": max(ids)})).scalars())
    # Ids grow in insertion order; RETURNING does not promise its rows' order.
    return Written(sorted(int(i) for i in ids), sorted(keys, key=_handed_on))


def _handed_on(key: str) -> tuple[int, int]:
    kind, _, message_id = key.partition(":")
    return KINDS.index(kind), int(message_id)


def _columns(items: Sequence[NewMessage], now: datetime) -> dict[str, list[Any]]:
    return {"roles": [item.role for item in items],
            "contents": [item.content for item in items],
            "tokens": [item.tokens for item in items],
            "said_at": [item.said_at or now for item in items]}


# -- the jobs -------------------------------------------------------------------------


class _json_object(FunctionElement[Any]):
    """A JSON object from key, value, key, value, …"""

    type = JSON()
    name = "json_object"
    inherit_cache = True


class _json_ids(FunctionElement[Any]):
    """An aggregate: the JSON array of its argument's values, in ascending order."""

    type = JSON()
    name = "json_ids"
    inherit_cache = True


@compiles(_json_object, "postgresql")
def _json_object_pg(element: Any, compiler: Any, **kw: Any) -> str:
    return f"json_build_object({compiler.process(element.clauses, **kw)})"


@compiles(_json_object, "sqlite")
def _json_object_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    return f"json_object({compiler.process(element.clauses, **kw)})"


@compiles(_json_ids, "postgresql")
def _json_ids_pg(element: Any, compiler: Any, **kw: Any) -> str:
    value = compiler.process(element.clauses, **kw)
    return f"json_agg({value} ORDER BY {value})"


@compiles(_json_ids, "sqlite")
def _json_ids_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    # SQLite before 3.44 has no ORDER BY in an aggregate; ``_jobs`` feeds it a subquery
    # ordered by id, and SQLite aggregates rows in the order they come.
    return f"json_group_array({compiler.process(element.clauses, **kw)})"


def _text(value: str) -> Any:
    return literal_column(f"'{value}'", Text)  # constants of this module only


def _jobs(new: FromClause, waiting: Any) -> Any:
    """The job rows the new messages imply (``new``: their id, role and tokens; ``waiting``:
    the session's tokens not yet summarised before them):

    - each user message is extracted, with the assistant reply right after it (both get
      their embeddings there);
    - then, if there was a user message, the user's memories are maintained, when that
      is due: no maintain job of the user's was queued since ``maintained_since`` (one
      probe of ``ix_jobs_user_kind_created``). Maintenance reads all the user's
      memories; scores decay over days, so once a ``maintain_interval_s`` is plenty,
      and a burst of exchanges costs one run, not one per exchange;
    - the messages no extraction covers are embedded (one job);
    - the session is summarised once its unsummarised tokens pass the threshold;
    - if there was a user message, the syntheses of the session's stretches the new
      messages fall in are rebuilt (from the first new message on, ``jobs.handlers``).
    """
    session = cast(bindparam("session_id"), Text)
    rows = select(
        new.c.id, new.c.role, new.c.tokens,
        func.lag(new.c.role).over(order_by=new.c.id).label("before"),
        func.lead(new.c.id).over(order_by=new.c.id).label("next_id"),
        func.lead(new.c.role).over(order_by=new.c.id).label("next_role"),
    ).cte("numbered")
    # aggregates computed apart, then filtered by WHERE: SQLite before 3.39 has no
    # HAVING without GROUP BY
    totals = select(func.min(rows.c.id).label("first"), func.max(rows.c.id).label("last"),
                    func.sum(rows.c.tokens).label("tokens"),
                   func.max(case((rows.c.role == "user", 1), else_=0)).label("said")
                   ).cte("totals")
    uncovered = select(rows.c.id).where(
        rows.c.role != "user",
        or_(rows.c.role != "assistant", func.coalesce(rows.c.before, "") != "user"),
    ).order_by(rows.c.id).subquery("uncovered")
    # the array goes into its object here: out of a subquery, SQLite would take it for text
    rest = select(func.min(uncovered.c.id).label("first"), func.count().label("count"),
                  _json_object(_text("message_ids"), _json_ids(uncovered.c.id)).label("payload"),
                  ).subquery("rest")

    def job(kind: str, message_id: Any, payload: Any) -> Any:
        return select((_text(f"{kind}:") + cast(message_id, Text)).label("key"),
                      _text(kind).label("kind"), payload.label("payload"))

    extract = job("extract", rows.c.id, _json_object(
        _text("session_id"), session, _text("user_message_id"), rows.c.id,
        _text("assistant_message_id"),
        case((rows.c.next_role == "assistant", rows.c.next_id), else_=null())),
    ).where(rows.c.role == "user")
    maintained = exists().where(
        jobs.c.user_id == bindparam("user_id", type_=jobs.c.user_id.type),
        jobs.c.kind == "maintain",
        jobs.c.created_at > bindparam("maintained_since", type_=UTCDateTime()))
    maintain = job("maintain", totals.c.last, _json_object(_text("session_id"), session)
                   ).where(totals.c.said == 1, ~maintained)
    embed = job("embed", rest.c.first, rest.c.payload).where(rest.c.count > 0)
    summarize = job("summarize", totals.c.last, _json_object(_text("session_id"), session)
                    ).where(waiting + totals.c.tokens > bindparam("threshold", type_=Integer))
    synthesize = job("synthesize", totals.c.last, _json_object(
        _text("session_id"), session, _text("from_message_id"), totals.c.first),
    ).where(totals.c.said == 1)
    return union_all(extract, maintain, embed, summarize, synthesize).subquery("implied")


def _queue(implied: Any) -> Any:
    """INSERT the implied jobs as pending, RETURNING their keys."""
    now = bindparam("now", type_=UTCDateTime())
    return jobs.insert().from_select(
        ["key", "kind", "payload", "user_id", "status", "attempts", "last_error",
         "created_at", "updated_at"],
        select(implied.c.key, implied.c.kind, implied.c.payload,
               bindparam("user_id", type_=jobs.c.user_id.type), _text("pending"),
               literal_column("0", Integer), null(), now, now),
    ).returning(jobs.c.key)


# -- the statements -------------------------------------------------------------------


def _opened(dialect: Any) -> Any:
    """Upsert the session row; RETURNING its tokens not yet folded into the summary
    (the statement cannot see messages inserted beside it)."""
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


def _write_pg() -> Any:
    """The session, the messages (arrays unnested into rows) and the jobs in one
    statement, which returns one row per new message id, then one per job key. Every
    array has one element per message, so the statement is the same for any number of
    messages and SQLAlchemy compiles it once."""
    batch = func.unnest(
        bindparam("roles", type_=ARRAY(messages.c.role.type)),
        bindparam("contents", type_=ARRAY(messages.c.content.type)),
        bindparam("tokens", type_=ARRAY(messages.c.tokens.type)),
        bindparam("said_at", type_=ARRAY(UTCDateTime())),
    ).table_valued("role", "content", "tokens", "said_at").render_derived()
    inserted = messages.insert().from_select(
        ["user_id", "session_id", "role", "content", "tokens", "summarized", "created_at"],
        select(bindparam("user_id", type_=messages.c.user_id.type),
               bindparam("session_id", type_=messages.c.session_id.type),
               batch.c.role, batch.c.content, batch.c.tokens, false(), batch.c.said_at),
    ).returning(messages.c.id, messages.c.role, messages.c.tokens).cte("inserted")
    opened = _opened(postgresql).cte("opened")
    queued = _queue(_jobs(inserted, select(opened.c.waiting).scalar_subquery())).cte("queued")
    return union_all(select(inserted.c.id, null().label("key")),
                     select(null(), queued.c.key))


def _queue_sqlite() -> Any:
    """The jobs of the messages with ids ``first``..``last`` of the session (ids grow,
    and the transaction holds SQLite's write lock: they are exactly the new ones)."""
    new = select(messages.c.id, messages.c.role, messages.c.tokens).where(
        messages.c.user_id == bindparam("user_id"),
        messages.c.session_id == bindparam("session_id"),
        messages.c.id.between(bindparam("first"), bindparam("last")),
    ).subquery("new")
    return _queue(_jobs(new, bindparam("waiting", type_=Integer)))


_WRITE_PG = _write_pg()
_OPEN_SQLITE = _opened(sqlite)
_INSERT_SQLITE = messages.insert().returning(messages.c.id)
_QUEUE_SQLITE = _queue_sqlite()
