"""PostgreSQL + pgvector: exact per-user scan ordered by cosine distance.

A user has at most a few hundred memories, so the btree on ``user_id`` narrows
the scan and an exact ``ORDER BY embedding <=> q`` is sub-millisecond. An HNSW
index would search globally and then filter by user, returning almost nothing.
"""

from __future__ import annotations

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..embeddings import Vector
from ..schema import EmbeddingType

_NEAREST = """
SELECT id, 1 - (embedding <=> :query) AS score
FROM memories
WHERE user_id = :user_id {state_filter}
ORDER BY embedding <=> :query
LIMIT :k
"""


class PostgresBackend:
    def configure(self, engine: AsyncEngine) -> None:
        return None

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        await conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:user_id, 0))"),
            {"user_id": user_id},
        )

    async def nearest(
        self,
        conn: AsyncConnection,
        user_id: str,
        query: Vector,
        k: int,
        *,
        include_archived: bool = False,
    ) -> list[tuple[str, float]]:
        state_filter = "" if include_archived else "AND state <> 'archived'"
        stmt = text(_NEAREST.format(state_filter=state_filter)).bindparams(
            bindparam("query", type_=EmbeddingType())
        )
        rows = await conn.execute(stmt, {"query": query, "user_id": user_id, "k": k})
        return [(row.id, float(row.score)) for row in rows]
