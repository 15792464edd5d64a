"""The search channels' SQL, one small module per database; everything else is shared.

Each channel is a method ranking one ``Corpus`` (a user's memories, or a user's
past messages) for a query: ``[(id, score)]``, best first. The corpus carries
the WHERE conditions, written once here for each of the two.

Statements are built once per shape and bound per call (``built``): building a
statement and its SQLAlchemy cache key cost more of a search than the database's
work did. A corpus's conditions therefore hold bound parameters (``params``), not
values, and its ``shape`` names which conditions it has: two corpora of one shape
share their statements.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, Protocol, TypeVar

from sqlalchemy import (
    Column,
    ColumnElement,
    Table,
    and_,
    bindparam,
    exists,
    func,
    not_,
    or_,
    select,
    union,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from truemem_core.embeddings import Vector
from truemem_core.search.filters import CheckedFilters
from truemem_core.storage.direct import fetch_all
from truemem_core.storage.schema import memories, messages, passages, syntheses

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Corpus:
    """What a channel ranks: the rows of ``table`` that pass ``where`` (one user's).

    ``params`` binds ``where``'s parameters; corpora of one ``shape`` have the same
    ``where`` objects, so statements built from one serve the other (``None``: a
    one-off corpus, whose statements are built for it alone).
    """

    table: Table
    user_id: str
    where: tuple[ColumnElement[bool], ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    shape: Hashable | None = None
    left_out: Any = None
    """A query of the ids of the user's rows ``where`` leaves out, when they are few:
    the corpus's statistics are then the user's rows' less theirs (read from indexes)
    instead of a test of every row."""

    @property
    def text(self) -> Column[Any]:
        # a memory's and a synthesis's is ``text``; a message's and a passage's ``content``
        return self.table.c.content if "content" in self.table.c else self.table.c.text

    @property
    def length(self) -> ColumnElement[int]:
        """A row's length for BM25: a memory's characters; a message's tokens, counted
        when it was recorded. Messages can be 100,000 characters each and a search
        weighs every one of the user's: measuring their text on every call would cost
        the whole history's size, where the stored count costs a column read (a
        passage's too). A synthesis is short: its characters."""
        if "tokens" in self.table.c:
            return self.table.c.tokens
        return func.length(self.text)

    def bind(self, **params: Any) -> dict[str, Any]:
        """The corpus's parameters and ``params``: what a statement built from it executes with."""
        return {**self.params, **params}


_BUILT: OrderedDict[Hashable, Any] = OrderedDict()
_BUILT_MAX = 512  # shapes x statement kinds x term counts stay well below this


def built(corpus: Corpus, build: Callable[..., S], *args: Hashable) -> S:
    """``build(corpus, *args)``, made once per (corpus shape, ``build``, ``args``)."""
    if corpus.shape is None:
        return build(corpus, *args)
    slot = (corpus.shape, build, args)
    try:
        _BUILT.move_to_end(slot)
        return _BUILT[slot]  # type: ignore[no-any-return]
    except KeyError:
        statement = _BUILT[slot] = build(corpus, *args)
        if len(_BUILT) > _BUILT_MAX:
            _BUILT.popitem(last=False)
        return statement


class _OneOf(FunctionElement[bool]):
    """``column IN`` a bound list: on PostgreSQL one array parameter
    (``= ANY``), so the statement is the same for any number of ids and psycopg
    prepares it once; on SQLite, which has no arrays, one parameter per id."""

    name = "one_of"  # untyped: typed Boolean, SQLite would render it "... = 1"
    inherit_cache = True


@compiles(_OneOf, "postgresql")
def _one_of_pg(element: _OneOf, compiler: Any, **kw: Any) -> str:
    column, ids = element.clauses
    array = bindparam(ids.key, type_=postgresql.ARRAY(column.type))
    return f"{compiler.process(column, **kw)} = ANY({compiler.process(array, **kw)})"


@compiles(_OneOf)
def _one_of(element: _OneOf, compiler: Any, **kw: Any) -> str:
    column, ids = element.clauses
    return str(compiler.process(column.in_(bindparam(ids.key, expanding=True)), **kw))


def one_of(column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """``column IN`` the list bound as ``name`` (see ``_OneOf``): ids, states, kinds."""
    return _OneOf(column, bindparam(name))


def memories_of(
    user_id: str, filters: CheckedFilters | None = None, *, include_archived: bool = False
) -> Corpus:
    """The user's memories that pass ``filters`` (which, when given, replace
    ``include_archived``)."""
    values: dict[str, Any] = {"corpus_user": user_id}
    if filters is None:
        shape: tuple[Any, ...] = ("memories", include_archived)
    else:
        optional = {"min_importance": filters.min_importance,
                    "created_after": filters.created_after,
                    "created_before": filters.created_before,
                    "as_of": filters.as_of, "valid_at": filters.valid_at}
        values |= {f"corpus_{name}": value for name, value in optional.items()
                   if value is not None}
        values["corpus_states"] = list(filters.states)
        if filters.kinds is not None:
            values["corpus_kinds"] = list(filters.kinds)
        shape = ("memories", filters.kinds is not None, filters.closed_too,
                 *(value is not None for value in optional.values()))
    return Corpus(memories, user_id, _memory_scope(shape), values, shape)


@cache
def _memory_scope(shape: tuple[Any, ...]) -> tuple[ColumnElement[bool], ...]:
    m = memories.c
    where = [m.user_id == bindparam("corpus_user")]
    if len(shape) == 2:  # no filters: all but archived, unless include_archived
        return (*where, *(() if shape[1] else (m.state != "archived",)))
    _, kinds, closed_too, importance, after, before, as_of, valid_at = shape
    states = one_of(m.state, "corpus_states")  # bound lists: one statement for any
    where.append(or_(states, CLOSED) if closed_too else states)
    if kinds:
        where.append(one_of(m.kind, "corpus_kinds"))
    if importance:
        where.append(m.importance >= bindparam("corpus_min_importance"))
    if after:
        where.append(m.created_at >= bindparam("corpus_created_after", type_=m.created_at.type))
    if before:
        where.append(m.created_at < bindparam("corpus_created_before", type_=m.created_at.type))
    return (*where, *time_travel(bindparam("corpus_as_of", type_=m.created_at.type) if as_of
                                 else None,
                                 bindparam("corpus_valid_at", type_=m.created_at.type) if valid_at
                                 else None))


def past_turns_of(user_id: str, session_id: str, recent: int) -> Corpus:
    """The user's messages, less the last ``recent`` of ``session_id`` (the context
    carries those verbatim) and less those searched by their passages (long ones,
    ``past_passages_of``); earlier messages of that session and every other session
    are in."""
    return Corpus(messages, user_id, _past_turns(), _past(user_id, session_id, recent),
                  ("turns",), _past_turns_left_out())


def past_passages_of(user_id: str, session_id: str, recent: int) -> Corpus:
    """The passages of the user's long messages, less those of the last ``recent``
    messages of ``session_id`` (as ``past_turns_of``)."""
    return Corpus(passages, user_id, _past_passages(), _past(user_id, session_id, recent),
                  ("passages",))


def _past(user_id: str, session_id: str, recent: int) -> dict[str, Any]:
    return {"corpus_user": user_id, "corpus_session": session_id,
            "corpus_recent": max(recent, 1) - 1}


def _first_recent() -> ColumnElement[Any]:
    """The id of the first message of the session's recent window (NULL: none)."""
    return (select(messages.c.id)
            .where(messages.c.user_id == bindparam("corpus_user"),
                   messages.c.session_id == bindparam("corpus_session"))
            .order_by(messages.c.id.desc()).limit(1).offset(bindparam("corpus_recent"))
            .scalar_subquery())


def syntheses_of(user_id: str, session_id: str) -> Corpus:
    """The user's syntheses, less the one of ``session_id`` (the context carries that
    session's own summary and recent messages)."""
    return Corpus(syntheses, user_id, _syntheses_scope(),
                  {"corpus_user": user_id, "corpus_session": session_id}, ("syntheses",))


@cache
def _syntheses_scope() -> tuple[ColumnElement[bool], ...]:
    return (syntheses.c.user_id == bindparam("corpus_user"),
            not_(and_(syntheses.c.kind == "session",
                      syntheses.c.key == bindparam("corpus_session"))))


@cache
def _past_turns() -> tuple[ColumnElement[bool], ...]:
    in_window = and_(messages.c.session_id == bindparam("corpus_session"),
                     messages.c.id >= func.coalesce(_first_recent(), 0))
    by_passages = exists().where(passages.c.message_id == messages.c.id)
    return (messages.c.user_id == bindparam("corpus_user"), not_(in_window), not_(by_passages))


@cache
def _past_turns_left_out() -> Any:
    """The messages ``_past_turns`` leaves out: those searched by their passages (the
    long ones) and the session's recent window."""
    return union(
        select(passages.c.message_id).where(passages.c.user_id == bindparam("corpus_user")),
        select(messages.c.id).where(messages.c.user_id == bindparam("corpus_user"),
                                    messages.c.session_id == bindparam("corpus_session"),
                                    messages.c.id >= func.coalesce(_first_recent(), 0)))


@cache
def _past_passages() -> tuple[ColumnElement[bool], ...]:
    in_window = and_(passages.c.session_id == bindparam("corpus_session"),
                     passages.c.message_id >= func.coalesce(_first_recent(), 0))
    return (passages.c.user_id == bindparam("corpus_user"), not_(in_window))


async def fetch_rows(
    conn: AsyncConnection, corpus: Corpus, statement: Any, params: Mapping[str, Any]
) -> Sequence[Any]:
    """The rows of a statement made by ``built`` for ``corpus``. Made once per shape, it
    is run by the driver directly (``storage.direct``); a one-off corpus's, made for one
    call, through SQLAlchemy, whose cache spares compiling it again."""
    if corpus.shape is None:
        return (await conn.execute(statement, params)).all()
    return await fetch_all(conn, statement, params)


async def awaited(query: Vector | Awaitable[Vector]) -> Vector:
    """The query's embedding, waited for if it is still being computed."""
    return await query if inspect.isawaitable(query) else query


class Channels(Protocol):
    async def nearest(
        self, conn: AsyncConnection, corpus: Corpus, query: Vector | Awaitable[Vector], k: int,
        *, approximate: bool = False,
    ) -> list[tuple[Any, float]]:
        """The corpus's ``k`` rows most similar to ``query``: (id, cosine), best first.
        Rows without an embedding yet (messages waiting for their job) are left out.
        Given the query's embedding still to come, a backend does what it can before
        it waits for it. ``approximate``: past messages and passages are searched in a
        way whose cost does not grow with the user's history (docs/search.md)."""

    async def keyword(
        self, conn: AsyncConnection, corpus: Corpus, terms: Sequence[str], k: int
    ) -> list[tuple[Any, float]]:
        """Full-text search for any of ``terms`` (words or phrases): (id, BM25), best first."""

    async def trigram(
        self,
        conn: AsyncConnection,
        corpus: Corpus,
        terms: Sequence[str],
        k: int,
        *,
        threshold: float,
    ) -> list[tuple[Any, float]]:
        """Fuzzy (character trigram) search for any of ``terms``: (id, score), best first."""

    async def lexical(
        self,
        conn: AsyncConnection,
        corpus: Corpus,
        keyword_terms: Sequence[str] | None,
        trigram_terms: Sequence[str] | None,
        k: int,
        *,
        threshold: float,
    ) -> dict[str, list[tuple[Any, float]]]:
        """The keyword and trigram channels (those whose terms are not ``None``) in as
        few round trips as the database allows: the rankings ``keyword`` and
        ``trigram`` return, by channel name."""


CLOSED = memories.c.invalidated_at.is_not(None)
"""A fact closed since (superseded or called wrong): archived now, yet current at an
earlier instant, where time travel (``as_of``, ``valid_at``) sees it."""


def time_travel(
    as_of: datetime | ColumnElement[Any] | None, valid_at: datetime | ColumnElement[Any] | None
) -> list[ColumnElement[bool]]:
    """Memories recorded and not yet invalidated at ``as_of``; true in the world at ``valid_at``
    (each a value or a bound parameter)."""
    m = memories.c
    where = []
    if as_of is not None:
        where += [m.created_at <= as_of, or_(m.invalidated_at.is_(None), m.invalidated_at > as_of)]
    if valid_at is not None:
        where += [func.coalesce(m.valid_from, m.created_at) <= valid_at,
                  or_(m.valid_to.is_(None), m.valid_to > valid_at)]
    return where


def channels_for_dialect(dialect: str) -> Channels:
    if dialect == "postgresql":
        from truemem_core.search.channels.postgres import PostgresChannels

        return PostgresChannels()
    if dialect == "sqlite":
        from truemem_core.search.channels.sqlite import SQLiteChannels

        return SQLiteChannels()
    raise NotImplementedError(f"unsupported database {dialect!r}: use SQLite or PostgreSQL")
