"""Dialect-specific SQL, one small module per database; everything else is shared."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..embeddings import Vector


class Backend(Protocol):
    def configure(self, engine: AsyncEngine) -> None:
        """Connection-level settings (pragmas, adapters)."""

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        """Serialise writers of one user until the transaction ends."""

    async def nearest(
        self,
        conn: AsyncConnection,
        user_id: str,
        query: Vector,
        k: int,
        *,
        include_archived: bool = False,
    ) -> list[tuple[str, float]]:
        """The user's ``k`` memories most similar to ``query``: (id, cosine), best first."""


def backend_for(dialect: str) -> Backend:
    if dialect == "postgresql":
        from .postgres import PostgresBackend

        return PostgresBackend()
    if dialect == "sqlite":
        from .sqlite import SQLiteBackend

        return SQLiteBackend()
    raise NotImplementedError(f"unsupported database {dialect!r}: use SQLite or PostgreSQL")
