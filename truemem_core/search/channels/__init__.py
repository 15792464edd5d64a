"""The search channels' SQL, one small module per database; everything else is shared.

Each search channel is a method returning ``[(memory id, score)]``,
best first, over one user's memories that pass the filters; ``scope`` below
is the one place those conditions are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import ColumnElement, func
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.search.filters import SearchFilters
from truemem_core.storage.schema import memories

LENGTH = func.length(memories.c.text).label("length")
AVG_LENGTH = func.avg(func.length(memories.c.text))


class Channels(Protocol):
    async def nearest(
        self,
        conn: AsyncConnection,
        user_id: str,
        query: Vector,
        k: int,
        *,
        include_archived: bool = False,
        filters: SearchFilters | None = None,
    ) -> list[tuple[str, float]]:
        """The user's ``k`` memories most similar to ``query``: (id, cosine), best first.

        ``filters``, when given, replaces ``include_archived``.
        """

    async def nearest_turns(
        self, conn: AsyncConnection, user_id: str, session_id: str, query: Vector, k: int
    ) -> list[tuple[int, float]]:
        """The user's ``k`` past messages (other sessions) closest to ``query``: (id, cosine)."""

    async def keyword(
        self,
        conn: AsyncConnection,
        user_id: str,
        terms: Sequence[str],
        k: int,
        *,
        filters: SearchFilters,
    ) -> list[tuple[str, float]]:
        """Full-text search for any of ``terms`` (words or phrases): (id, BM25), best first."""

    async def trigram(
        self,
        conn: AsyncConnection,
        user_id: str,
        terms: Sequence[str],
        k: int,
        *,
        filters: SearchFilters,
        threshold: float,
    ) -> list[tuple[str, float]]:
        """Fuzzy (character trigram) search for any of ``terms``: (id, score), best first."""


def scope(
    user_id: str, filters: SearchFilters | None, *, include_archived: bool = False
) -> list[ColumnElement[bool]]:
    """The WHERE conditions of every search: this user, and the filters."""
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
    return where


def channels_for_dialect(dialect: str) -> Channels:
    if dialect == "postgresql":
        from truemem_core.search.channels.postgres import PostgresChannels

        return PostgresChannels()
    if dialect == "sqlite":
        from truemem_core.search.channels.sqlite import SQLiteChannels

        return SQLiteChannels()
    raise NotImplementedError(f"unsupported database {dialect!r}: use SQLite or PostgreSQL")
