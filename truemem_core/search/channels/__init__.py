"""The search channels' SQL, one small module per database; everything else is shared.

Each channel is a method ranking one ``Corpus`` (a user's memories, or a user's
past messages) for a query: ``[(id, score)]``, best first. The corpus carries
the WHERE conditions, written once here for each of the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Column, ColumnElement, Table, and_, func, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.search.filters import SearchFilters
from truemem_core.storage.schema import memories, messages


@dataclass(frozen=True, slots=True)
class Corpus:
    """What a channel ranks: the rows of ``table`` that pass ``where`` (one user's)."""

    table: Table
    user_id: str
    where: tuple[ColumnElement[bool], ...]

    @property
    def text(self) -> Column[Any]:
        return self.table.c.text if self.table is memories else self.table.c.content

    @property
    def length(self) -> ColumnElement[int]:
        return func.length(self.text).label("length")


def memories_of(
    user_id: str, filters: SearchFilters | None = None, *, include_archived: bool = False
) -> Corpus:
    """The user's memories that pass ``filters`` (which, when given, replace
    ``include_archived``)."""
    return Corpus(memories, user_id, tuple(scope(user_id, filters,
                                                 include_archived=include_archived)))


def past_turns_of(user_id: str, session_id: str, recent: int) -> Corpus:
    """The user's messages, less the last ``recent`` of ``session_id`` (the context
    carries those verbatim); earlier messages of that session and every other
    session are in."""
    first_recent = (
        select(messages.c.id)
        .where(messages.c.user_id == user_id, messages.c.session_id == session_id)
        .order_by(messages.c.id.desc()).limit(1).offset(max(recent, 1) - 1)
        .scalar_subquery())
    in_window = and_(messages.c.session_id == session_id,
                     messages.c.id >= func.coalesce(first_recent, 0))
    return Corpus(messages, user_id, (messages.c.user_id == user_id, not_(in_window)))


class Channels(Protocol):
    async def nearest(
        self, conn: AsyncConnection, corpus: Corpus, query: Vector, k: int
    ) -> list[tuple[Any, float]]:
        """The corpus's ``k`` rows most similar to ``query``: (id, cosine), best first.
        Rows without an embedding yet (messages waiting for their job) are left out."""

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


def scope(
    user_id: str, filters: SearchFilters | None, *, include_archived: bool = False
) -> list[ColumnElement[bool]]:
    """The WHERE conditions of every memory search: this user, and the filters."""
    where = [memories.c.user_id == user_id]
    if filters is None:
        if not include_archived:
            where.append(memories.c.state != "archived")
        return where
    where.append(memories.c.state.in_(filters.states))
    if filters.kinds is not None:
        where.append(memories.c.kind.in_(filters.kinds))
    if filters.min_importance is not None:
        where.append(memories.c.importance >= filters.min_importance)
    if filters.created_after is not None:
        where.append(memories.c.created_at >= filters.created_after)
    if filters.created_before is not None:
        where.append(memories.c.created_at < filters.created_before)
    return where + time_travel(filters.as_of, filters.valid_at)


def time_travel(as_of: datetime | None, valid_at: datetime | None) -> list[ColumnElement[bool]]:
    """Memories recorded and not yet invalidated at ``as_of``; true in the world at ``valid_at``."""
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
