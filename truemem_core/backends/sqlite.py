"""SQLite: exact cosine in NumPy over one user's vectors; writers take the file lock."""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..embeddings import Vector
from ..schema import memories


class SQLiteBackend:
    def configure(self, engine: AsyncEngine) -> None:
        @event.listens_for(engine.sync_engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _begin(conn: Any) -> None:
            # IMMEDIATE takes the write lock up front, so read-then-write
            # transactions queue instead of failing with "database is locked".
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        return None  # BEGIN IMMEDIATE already serialises every writer

    async def nearest(
        self,
        conn: AsyncConnection,
        user_id: str,
        query: Vector,
        k: int,
        *,
        include_archived: bool = False,
    ) -> list[tuple[str, float]]:
        stmt = select(memories.c.id, memories.c.embedding).where(memories.c.user_id == user_id)
        if not include_archived:
            stmt = stmt.where(memories.c.state != "archived")
        rows = (await conn.execute(stmt)).all()
        if not rows:
            return []
        matrix = np.stack([row.embedding for row in rows])
        scores = matrix @ np.asarray(query, dtype=np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(rows[i].id, float(scores[i])) for i in top]
