"""Long-term memory: add (with dedup and pruning), read, edit, delete, search, export.

Every public coroutine is one transaction. Every query is filtered by
``user_id``: another user's memory id behaves exactly like an unknown id.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from . import conversation
from .admission import score_candidate
from .classify import classify_kind
from .contradiction import supersessions
from .embeddings import Embedder, Vector, normalize
from .errors import InvalidInputError, NotFoundError
from .importance import FEEDBACK, dynamic_score, is_protected, next_state, search_penalty
from .lifecycle import PruneCandidate, merge, select_for_pruning
from .models import Kind, Memory, MemoryEvent, ScoredMemory, Source
from .schema import admission_rejections, memories, memory_events, utcnow
from .settings import Settings
from .store import Database
from .tokens import TokenCounter
from .validation import check_id, check_importance, check_k, check_kind, check_source, check_text

log = logging.getLogger("truemem.memories")

_MEMORY_COLUMNS = [c for c in memories.c if c.name != "embedding"]


def _memory(row: Row[Any]) -> Memory:
    return Memory(
        id=row.id,
        user_id=row.user_id,
        text=row.text,
        importance=row.importance,
        kind=row.kind,
        source=row.source,
        state=row.state,
        reinforcements=row.reinforcements,
        created_at=row.created_at,
        updated_at=row.updated_at,
        source_message_id=row.source_message_id,
        valid_to=row.valid_to,
        superseded_by=row.superseded_by,
    )


def _event(row: Row[Any]) -> MemoryEvent:
    return MemoryEvent(
        memory_id=row.memory_id,
        action=row.action,
        created_at=row.created_at,
        reason=row.reason,
        old_text=row.old_text,
        new_text=row.new_text,
        old_importance=row.old_importance,
        new_importance=row.new_importance,
    )


_NEIGHBOURS = 20  # nearest memories checked for duplicates and superseded facts


@dataclasses.dataclass(frozen=True, slots=True)
class _Candidate:
    user: str
    text: str
    importance: int
    kind: Kind
    source: Source
    source_message_id: int | None
    vector: Vector
    supersedes: tuple[str, ...] = ()  # ids an LLM judged this fact to replace, unchecked


def _closes(new: _Candidate, current: Mapping[str, Any]) -> tuple[dict[str, str], bool]:
    """The current facts ``new`` supersedes, each with why, and whether one was spared.

    Rules and the LLM's judgement add up; only ids in ``current`` (this user's
    live, valid facts) count, so a stale or foreign id from the LLM does nothing.
    """
    found = supersessions(new.text, [(i, row.text) for i, row in current.items()])
    reasons = {s.id: s.explain() for s in found}
    for memory_id in new.supersedes:
        if memory_id in current:
            reasons.setdefault(memory_id, f"judged by the LLM: {new.text}")
    # an extracted fact never overrides what the user asked us to remember
    closed = {i: why for i, why in reasons.items()
              if not (new.source == "extracted" and current[i].source == "explicit")}
    return closed, len(closed) < len(reasons)


def _event_row(**values: Any) -> dict[str, Any]:
    """A full ``memory_events`` row (bulk inserts need the same keys in every row)."""
    return {
        "reason": None, "old_text": None, "new_text": None,
        "old_importance": None, "new_importance": None, **values,
    }


class MemoryService:
    def __init__(
        self, db: Database, embedder: Embedder, settings: Settings, tokens: TokenCounter
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.tokens = tokens

    # -- helpers --------------------------------------------------------------

    def user(self, user_id: Any) -> str:
        return check_id(user_id, "user_id", self.settings.max_id_chars)

    async def embed(self, texts: Sequence[str]) -> Vector:
        """Embed off the event loop (the model is CPU-bound and releases the GIL)."""
        return normalize(await asyncio.to_thread(self.embedder.embed, list(texts)))

    async def _row(self, conn: AsyncConnection, user_id: str, memory_id: Any) -> Row[Any]:
        if not isinstance(memory_id, str):
            raise InvalidInputError(f"memory_id must be a str, got {type(memory_id).__name__}")
        row = (
            await conn.execute(
                select(*_MEMORY_COLUMNS).where(
                    memories.c.id == memory_id, memories.c.user_id == user_id
                )
            )
        ).first()
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return row

    async def _log(self, conn: AsyncConnection, user_id: str, events: list[dict[str, Any]]) -> None:
        if events:
            now = utcnow()
            await conn.execute(
                memory_events.insert(),
                [_event_row(user_id=user_id, created_at=now, **event) for event in events],
            )

    # -- writes ---------------------------------------------------------------

    async def add(
        self,
        user_id: Any,
        text: Any,
        *,
        importance: int | None = None,
        kind: str | None = None,
        source: str = "manual",
        source_message_id: int | None = None,
        conn: AsyncConnection | None = None,
    ) -> Memory:
        """Store a fact, or fold it into a near-duplicate; prune past the soft limit.

        A fact that supersedes a stored one (same subject and attribute, new
        value) closes the old one's validity. ``kind=None`` classifies it.
        """
        stored = await self._store(user_id, text, importance, kind, source, source_message_id,
                                   conn, admit=False)
        assert stored is not None  # only admission control rejects
        return stored

    async def add_candidate(
        self,
        user_id: Any,
        text: Any,
        *,
        importance: int,
        kind: str | None,
        source_message_id: int | None,
        conn: AsyncConnection,
        supersedes: Sequence[str] = (),
    ) -> Memory | None:
        """Like ``add`` for an extracted fact, behind admission control.

        A candidate scoring below ``Settings.admission_threshold`` is not stored;
        the rejection is recorded in ``admission_rejections`` with its factors.
        ``supersedes``: ids an LLM judged it to replace, on top of the rules';
        those that are not this user's current facts are ignored.
        """
        if isinstance(supersedes, str) or not all(isinstance(i, str) for i in supersedes):
            raise InvalidInputError("supersedes must be a sequence of memory ids (str)")
        return await self._store(user_id, text, importance, kind, "extracted",
                                 source_message_id, conn, admit=True,
                                 supersedes=tuple(supersedes))

    async def _store(
        self,
        user_id: Any,
        text: Any,
        importance: int | None,
        kind: str | None,
        source: str,
        source_message_id: int | None,
        conn: AsyncConnection | None,
        *,
        admit: bool,
        supersedes: tuple[str, ...] = (),
    ) -> Memory | None:
        user = self.user(user_id)
        fact = check_text(text, "text", self.settings.max_text_chars)
        candidate = _Candidate(
            user=user,
            text=fact,
            importance=check_importance(
                self.settings.default_importance if importance is None else importance),
            kind=check_kind(classify_kind(fact) if kind is None else kind),
            source=check_source(source),
            source_message_id=source_message_id,
            vector=(await self.embed([fact]))[0],
            supersedes=supersedes,
        )
        if conn is not None:
            return await self._add(conn, candidate, admit=admit)
        async with self.db.transaction() as conn:
            return await self._add(conn, candidate, admit=admit)

    async def _add(
        self, conn: AsyncConnection, new: _Candidate, *, admit: bool
    ) -> Memory | None:
        user = new.user
        await self.db.backend.lock_user(conn, user)
        nearest = await self.db.backend.nearest(
            conn, user, new.vector, _NEIGHBOURS, include_archived=True)
        duplicate = (nearest[0][0] if nearest and nearest[0][1] >= self.settings.dedup_threshold
                     else None)
        current = await self._current(
            conn, user, [i for i in dict.fromkeys([*(i for i, _ in nearest), *new.supersedes])
                         if i != duplicate])
        superseded, spared = _closes(new, current)
        if duplicate is not None:
            # A restatement is folded in, and still closes what it contradicts:
            # "Lives in Madrid" again after "Moved to Berlin" reopens Madrid, closes Berlin.
            merged = await self._merge(conn, user, duplicate, new.text, new.vector,
                                       new.importance, new.source, new.source_message_id)
            await self._supersede(conn, user, superseded, current, by=duplicate)
            return merged
        if admit:
            admission = score_candidate(
                new.text, source=new.source,
                max_similarity_to_stored=max(0.0, nearest[0][1]) if nearest else 0.0,
                contradicts_stored=spared,
                supersedes_stored=bool(superseded),
                threshold=self.settings.admission_threshold)
            if not admission.admitted:
                await self._reject(conn, new, admission)
                return None
        now = utcnow()
        memory_id = str(uuid.uuid4())
        await conn.execute(
            memories.insert().values(
                id=memory_id,
                user_id=user,
                text=new.text,
                importance=new.importance,
                kind=new.kind,
                source=new.source,
                state="active",
                reinforcements=0,
                embedding=new.vector,
                embedding_model=self.embedder.model_name,
                source_message_id=new.source_message_id,
                created_at=now,
                updated_at=now,
                valid_from=now,
            )
        )
        await self._log(conn, user, [{
            "memory_id": memory_id, "action": "added", "reason": new.source,
            "new_text": new.text, "new_importance": new.importance}])
        await self._supersede(conn, user, superseded, current, by=memory_id)
        await self._prune(conn, user)
        return _memory(await self._row(conn, user, memory_id))

    async def _supersede(
        self, conn: AsyncConnection, user: str, superseded: Mapping[str, str],
        current: Mapping[str, Any], *, by: str,
    ) -> None:
        """Close the validity of ``superseded`` (id -> why) in favour of memory ``by``."""
        if not superseded:
            return
        now = utcnow()
        await conn.execute(
            memories.update()
            .where(memories.c.user_id == user, memories.c.id.in_(list(superseded)))
            .values(valid_to=now, invalidated_at=now, superseded_by=by,
                    state="archived", updated_at=now))
        await self._log(conn, user, [
            {"memory_id": i, "action": "superseded", "reason": f"{why} (by {by})",
             "old_text": current[i].text, "new_text": current[i].text}
            for i, why in superseded.items()])

    async def _current(
        self, conn: AsyncConnection, user: str, ids: Sequence[str]
    ) -> dict[str, Any]:
        """Of ``ids``, the memories that are live and still valid (may be superseded)."""
        if not ids:
            return {}
        rows = await conn.execute(
            select(memories.c.id, memories.c.text, memories.c.source).where(
                memories.c.user_id == user, memories.c.id.in_(list(ids)),
                memories.c.state != "archived", memories.c.valid_to.is_(None)))
        return {row.id: row for row in rows}

    async def nearest_current(
        self, user_id: Any, vector: Vector, k: int
    ) -> list[tuple[str, str]]:
        """The user's ``k`` current memories nearest ``vector``: (id, text), nearest first.

        Read-only, outside any write transaction: the caller may then wait on an LLM.
        """
        user = self.user(user_id)
        async with self.db.transaction(readonly=True) as conn:
            nearest = await self.db.backend.nearest(conn, user, vector, k)
            current = await self._current(conn, user, [i for i, _ in nearest])
        return [(i, current[i].text) for i, _ in nearest if i in current]

    async def _reject(self, conn: AsyncConnection, new: _Candidate, admission: Any) -> None:
        log.info("admission rejected %r: %s", new.text, admission.explain())
        await conn.execute(admission_rejections.insert().values(
            user_id=new.user, text=new.text, source=new.source, score=admission.score,
            threshold=admission.threshold, factors=dataclasses.asdict(admission.factors),
            source_message_id=new.source_message_id, created_at=utcnow()))

    async def _merge(
        self,
        conn: AsyncConnection,
        user: str,
        memory_id: str,
        fact: str,
        vector: Vector,
        importance: int,
        source: str,
        source_message_id: int | None,
    ) -> Memory:
        old = await self._row(conn, user, memory_id)
        replay = source_message_id is not None and source_message_id == old.source_message_id
        decision = merge(
            old_text=old.text,
            old_importance=old.importance,
            new_text=fact,
            new_importance=importance,
            replay=replay,
            reinforcement_cap=self.settings.reinforcement_cap,
        )
        values: dict[str, Any] = {
            "text": decision.text,
            "importance": decision.importance,
            "reinforcements": old.reinforcements + int(decision.reinforced),
            "state": "active",  # a restated archived fact comes back
            "updated_at": utcnow(),
        }
        reopened = old.valid_to is not None
        if reopened:  # restated after something superseded it: true again, from now
            values.update(valid_to=None, invalidated_at=None, superseded_by=None,
                          valid_from=values["updated_at"])
        if source == "explicit":
            values["source"] = "explicit"
        if decision.text != old.text:
            values["embedding"] = vector
            values["source_message_id"] = source_message_id
        await conn.execute(
            memories.update().where(memories.c.id == memory_id).values(**values)
        )
        await self._log(conn, user, [{
            "memory_id": memory_id, "action": "merged",
            "reason": ("restated after it was superseded: current again" if reopened
                       else "reinforced by a restatement" if decision.reinforced else "replayed"),
            "old_text": old.text, "new_text": decision.text,
            "old_importance": old.importance, "new_importance": decision.importance,
        }])
        return _memory(await self._row(conn, user, memory_id))

    async def update(
        self, user_id: Any, memory_id: Any, *, text: Any = None, importance: Any = None
    ) -> Memory:
        user = self.user(user_id)
        if text is None and importance is None:
            raise InvalidInputError("nothing to update: give text= and/or importance=")
        new_text = None if text is None else check_text(text, "text", self.settings.max_text_chars)
        new_importance = None if importance is None else check_importance(importance)
        vector = None if new_text is None else (await self.embed([new_text]))[0]
        async with self.db.transaction() as conn:
            old = await self._row(conn, user, memory_id)
            values: dict[str, Any] = {"updated_at": utcnow()}
            if new_text is not None:
                values.update(text=new_text, embedding=vector)
            if new_importance is not None:
                values["importance"] = new_importance
            await conn.execute(
                memories.update().where(memories.c.id == old.id).values(**values)
            )
            await self._log(conn, user, [{
                "memory_id": old.id, "action": "updated", "reason": "edited",
                "old_text": old.text, "new_text": new_text or old.text,
                "old_importance": old.importance,
                "new_importance": new_importance or old.importance,
            }])
            return _memory(await self._row(conn, user, old.id))

    async def delete(self, user_id: Any, memory_id: Any) -> None:
        """Delete a memory and its text everywhere; history keeps only that it was deleted."""
        user = self.user(user_id)
        async with self.db.transaction() as conn:
            row = await self._row(conn, user, memory_id)
            await self._forget(conn, user, [row.id], reason="deleted by the user")

    async def _forget(
        self, conn: AsyncConnection, user: str, ids: Sequence[str], *, reason: str
    ) -> None:
        scope = (memory_events.c.user_id == user) & memory_events.c.memory_id.in_(ids)
        await conn.execute(
            memory_events.update().where(scope).values(old_text=None, new_text=None, reason=None)
        )
        # The facts these replaced stay closed, but their history must not quote them.
        await conn.execute(
            memory_events.update()
            .where(memory_events.c.user_id == user, memory_events.c.action == "superseded",
                   or_(*(memory_events.c.reason.endswith(f"(by {i})", autoescape=True)
                         for i in ids)))
            .values(reason="superseded by a memory that was since deleted"))
        await conn.execute(
            memories.update()
            .where(memories.c.user_id == user, memories.c.superseded_by.in_(ids))
            .values(superseded_by=None))
        await conn.execute(
            memories.delete().where(memories.c.user_id == user, memories.c.id.in_(ids))
        )
        await self._log(conn, user, [{"memory_id": i, "action": "deleted", "reason": reason}
                                     for i in ids])

    async def feedback(self, user_id: Any, memory_id: Any, verdict: Any) -> Memory:
        """Record the user's verdict on a memory ("helpful", "irrelevant", "wrong").

        It moves the memory's dynamic score (see ``importance.py``); the next
        maintenance pass applies the state that score implies.
        """
        user = self.user(user_id)
        if verdict not in FEEDBACK:
            raise InvalidInputError(
                f"verdict must be one of {', '.join(FEEDBACK)}; got {verdict!r}")
        async with self.db.transaction() as conn:
            row = await self._row(conn, user, memory_id)
            await conn.execute(memories.update().where(memories.c.id == row.id).values(
                feedback=memories.c.feedback + FEEDBACK[verdict], updated_at=utcnow()))
            await self._log(conn, user, [{"memory_id": row.id, "action": "feedback",
                                          "reason": verdict}])
            return _memory(await self._row(conn, user, row.id))

    async def touch(self, user_id: str, ids: Sequence[str]) -> None:
        """Count a retrieval of ``ids`` and bring ephemeral or archived ones back."""
        if not ids:
            return
        async with self.db.transaction() as conn:
            await conn.execute(
                memories.update()
                .where(memories.c.user_id == user_id, memories.c.id.in_(list(ids)),
                       memories.c.valid_to.is_(None))
                .values(retrievals=memories.c.retrievals + 1, last_accessed_at=utcnow(),
                        state="active"))

    async def maintain(self, user_id: Any) -> dict[str, str]:
        """Recompute dynamic scores, move states to match, then prune; returns changes."""
        user = self.user(user_id)
        now = utcnow()
        async with self.db.transaction() as conn:
            await self.db.backend.lock_user(conn, user)
            rows = (await conn.execute(select(
                memories.c.id, memories.c.importance, memories.c.source, memories.c.state,
                memories.c.retrievals, memories.c.last_accessed_at, memories.c.created_at,
                memories.c.reinforcements, memories.c.feedback,
            ).where(memories.c.user_id == user, memories.c.valid_to.is_(None)))).all()
            changed: dict[str, str] = {}
            for row in rows:
                score = dynamic_score(
                    importance=row.importance, retrievals=row.retrievals,
                    last_access=row.last_accessed_at, created_at=row.created_at,
                    reinforcements=row.reinforcements, feedback=row.feedback, now=now)
                state = next_state(row.state, score, protected=is_protected(
                    row.importance, row.source,
                    protected_importance=self.settings.protected_importance))
                values: dict[str, Any] = {"dynamic_score": score}
                if state != row.state:
                    values["state"] = changed[row.id] = state
                await conn.execute(
                    memories.update().where(memories.c.id == row.id).values(**values))
            await self._log(conn, user, [
                {"memory_id": i, "action": "lifecycle", "reason": f"now {state}"}
                for i, state in changed.items()])
            for memory_id in await self._prune(conn, user):
                changed[memory_id] = "archived"
            return changed

    async def prune(self, user_id: Any) -> list[str]:
        """Archive the user's excess memories past the soft limit; returns their ids."""
        user = self.user(user_id)
        async with self.db.transaction() as conn:
            await self.db.backend.lock_user(conn, user)
            return await self._prune(conn, user)

    async def _prune(self, conn: AsyncConnection, user: str) -> list[str]:
        live = (memories.c.user_id == user) & (memories.c.state != "archived")
        count = (await conn.execute(select(func.count()).where(live))).scalar_one()
        excess = count - self.settings.memory_limit
        if excess <= 0:
            return []
        rows = await conn.execute(
            select(memories.c.id, memories.c.importance, memories.c.created_at, memories.c.text)
            .where(live, memories.c.importance < self.settings.protected_importance)
        )
        by_id = {row.id: row for row in rows}
        victims = select_for_pruning(
            [PruneCandidate(r.id, r.importance, r.created_at) for r in by_id.values()],
            excess=excess,
            protected_importance=self.settings.protected_importance,
        )
        if not victims:
            return []
        await conn.execute(
            memories.update()
            .where(memories.c.user_id == user, memories.c.id.in_(victims))
            .values(state="archived", updated_at=utcnow())
        )
        await self._log(conn, user, [{
            "memory_id": i, "action": "pruned",
            "reason": f"over the soft limit of {self.settings.memory_limit}",
            "old_text": by_id[i].text, "new_text": by_id[i].text,
            "old_importance": by_id[i].importance, "new_importance": by_id[i].importance,
        } for i in victims])
        return victims

    async def erase_user(self, user_id: Any) -> int:
        """Remove every row of the user; returns how many memories were removed."""
        from .schema import jobs, messages, sessions

        user = self.user(user_id)
        async with self.db.transaction() as conn:
            await self.db.backend.lock_user(conn, user)
            removed = await conn.execute(memories.delete().where(memories.c.user_id == user))
            for table in (memory_events, messages, sessions, jobs, admission_rejections):
                await conn.execute(table.delete().where(table.c.user_id == user))
            return int(removed.rowcount or 0)

    # -- reads ----------------------------------------------------------------

    async def get(self, user_id: Any, memory_id: Any) -> Memory:
        user = self.user(user_id)
        async with self.db.transaction(readonly=True) as conn:
            return _memory(await self._row(conn, user, memory_id))

    async def list_memories(self, user_id: Any, *, include_archived: bool = False) -> list[Memory]:
        user = self.user(user_id)
        stmt = select(*_MEMORY_COLUMNS).where(memories.c.user_id == user)
        if not include_archived:
            stmt = stmt.where(memories.c.state != "archived")
        stmt = stmt.order_by(memories.c.importance.desc(), memories.c.created_at)
        async with self.db.transaction(readonly=True) as conn:
            return [_memory(row) for row in await conn.execute(stmt)]

    async def history(self, user_id: Any, memory_id: Any) -> list[MemoryEvent]:
        user = self.user(user_id)
        if not isinstance(memory_id, str):
            raise InvalidInputError(f"memory_id must be a str, got {type(memory_id).__name__}")
        stmt = (
            select(memory_events)
            .where(memory_events.c.user_id == user, memory_events.c.memory_id == memory_id)
            .order_by(memory_events.c.id)
        )
        async with self.db.transaction(readonly=True) as conn:
            events = [_event(row) for row in await conn.execute(stmt)]
        if not events:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return events

    async def search(
        self,
        user_id: Any,
        query: Any,
        *,
        k: int | None = None,
        mode: Any = "hybrid",
        kind: Any = None,
        min_importance: Any = None,
        state: Any = None,
        created_after: Any = None,
        created_before: Any = None,
        include_archived: Any = False,
        vector: Vector | None = None,
    ) -> list[ScoredMemory]:
        """Hybrid (RRF of vector, keyword, trigram) or single-channel top-k; see search.py.

        In hybrid and vector mode a user with fewer than k memories gets all of them.
        """
        from . import search
        from .retrieval import check_mode, make_filters

        user = self.user(user_id)
        text = check_text(query, "query", self.settings.max_message_chars)
        k = check_k(self.settings.search_k if k is None else k)
        mode = check_mode(mode)
        filters = make_filters(
            kind=kind, min_importance=min_importance, state=state,
            include_archived=include_archived, created_after=created_after,
            created_before=created_before,
        )
        if vector is None and "vector" in search.channels_for(mode, self.settings):
            vector = (await self.embed([text]))[0]
        async with self.db.transaction(readonly=True) as conn:
            hits = await search.run(conn, self.db.backend, user, text, vector, k=k, mode=mode,
                                    filters=filters, settings=self.settings)
            if not hits:
                return []
            rows = await conn.execute(
                select(*_MEMORY_COLUMNS).where(
                    memories.c.user_id == user, memories.c.id.in_([h.id for h in hits])
                )
            )
            found = {row.id: _memory(row) for row in rows}
        # Ephemeral (and archived, when asked for) memories are down-ranked, not hidden.
        scored = [
            ScoredMemory(found[h.id], h.score * search_penalty(found[h.id].state), h.scores,
                         h.ranks)
            for h in hits if h.id in found
        ]
        return sorted(scored, key=lambda hit: -hit.score)

    async def reembed(
        self, *, batch: int = 256, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Recompute every stored vector with this embedder (after changing models).

        Runs in batches; the store adopts the new model only once all are done, so
        an interrupted run is simply run again.
        """
        async with self.db.transaction() as conn:
            ids = [row.id for row in await conn.execute(
                select(memories.c.id).order_by(memories.c.id))]
        for start in range(0, len(ids), batch):
            async with self.db.transaction() as conn:
                rows = (await conn.execute(select(memories.c.id, memories.c.text).where(
                    memories.c.id.in_(ids[start:start + batch])))).all()
                vectors = await self.embed([row.text for row in rows])
                for row, vector in zip(rows, vectors, strict=True):
                    await conn.execute(memories.update().where(memories.c.id == row.id).values(
                        embedding=vector, embedding_model=self.embedder.model_name))
            if progress:
                progress(min(start + batch, len(ids)), len(ids))
        async with self.db.transaction() as conn:
            await self.db.set_embedder(conn, self.embedder.model_name, self.embedder.dimension)
        return len(ids)

    # -- portability ------------------------------------------------------------

    async def export_user(self, user_id: Any) -> dict[str, Any]:
        user = self.user(user_id)
        async with self.db.transaction(readonly=True) as conn:
            rows = (await conn.execute(
                select(*_MEMORY_COLUMNS).where(memories.c.user_id == user)
                .order_by(memories.c.created_at)
            )).all()
            events = (await conn.execute(
                select(memory_events).where(memory_events.c.user_id == user)
                .order_by(memory_events.c.id)
            )).all()
            chats = await conversation.export_sessions(conn, user)
        history: dict[str, list[dict[str, Any]]] = {}
        for event in events:
            history.setdefault(event.memory_id, []).append(_event(event).to_dict())
        return {
            "format": "truemem.user/1",
            "user_id": user,
            "exported_at": utcnow().isoformat(),
            "memories": [
                {**_memory(row).to_dict(), "history": history.pop(row.id, [])} for row in rows
            ],
            "deleted": [{"memory_id": i, "history": h} for i, h in history.items()],
            "sessions": chats,
        }

    async def import_user(self, user_id: Any, data: Mapping[str, Any]) -> list[Memory]:
        """Restore an export under ``user_id``: new ids, same texts, ranks, times and history.

        Everything is validated before anything is written; vectors are recomputed
        with this store's embedder. Imported memories are not deduplicated.
        """
        user = self.user(user_id)
        items = _parse_export(data, self.settings.max_text_chars)
        try:
            chats = conversation.parse_sessions(data.get("sessions"))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"export 'sessions' is malformed: {exc!r}") from exc
        vectors = await self.embed([item["text"] for item in items]) if items else None
        now = utcnow()
        new_ids = {item["exported_id"]: str(uuid.uuid4()) for item in items if item["exported_id"]}
        rows, events = [], []
        for item, vector in zip(items, vectors if vectors is not None else [], strict=True):
            memory_id = new_ids[item["exported_id"]] if item["exported_id"] else str(uuid.uuid4())
            rows.append({
                "id": memory_id, "user_id": user, "text": item["text"],
                "importance": item["importance"], "kind": item["kind"],
                "source": item["source"], "state": item["state"],
                "reinforcements": item["reinforcements"], "embedding": vector,
                "embedding_model": self.embedder.model_name, "source_message_id": None,
                "created_at": item["created_at"], "updated_at": item["updated_at"],
                # a closed fact stays closed, pointing at its successor's new id
                "valid_to": item["valid_to"], "invalidated_at": item["valid_to"],
                "superseded_by": new_ids.get(item["superseded_by"] or ""),
            })
            for event in item["history"]:
                events.append(_event_row(**event, memory_id=memory_id, user_id=user))
            events.append(_event_row(memory_id=memory_id, user_id=user, action="imported",
                                     reason="import_user", new_text=item["text"],
                                     new_importance=item["importance"], created_at=now))
        async with self.db.transaction() as conn:
            await self.db.backend.lock_user(conn, user)
            if rows:
                await conn.execute(memories.insert(), rows)
                await conn.execute(memory_events.insert(), events)
            await conversation.import_sessions(conn, user, chats, self.tokens.count)
            return [_memory(await self._row(conn, user, row["id"])) for row in rows]


def _parse_export(data: Mapping[str, Any], max_chars: int) -> list[dict[str, Any]]:
    """Validate an export document; raise ``InvalidInputError`` naming the bad field."""
    from .validation import check_importance as imp

    if not isinstance(data, Mapping) or data.get("format") != "truemem.user/1":
        raise InvalidInputError("not a TrueMem export (expected format 'truemem.user/1')")
    items = data.get("memories")
    if not isinstance(items, list):
        raise InvalidInputError("export has no 'memories' list")
    parsed = []
    for n, item in enumerate(items):
        where = f"memories[{n}]"
        try:
            history = [
                {
                    "action": e["action"], "reason": e.get("reason"),
                    "old_text": e.get("old_text"), "new_text": e.get("new_text"),
                    "old_importance": e.get("old_importance"),
                    "new_importance": e.get("new_importance"),
                    "created_at": datetime.fromisoformat(e["created_at"]),
                }
                for e in item.get("history", [])
            ]
            parsed.append({
                "text": check_text(item["text"], f"{where}.text", max_chars),
                "importance": imp(item["importance"]),
                "kind": check_kind(item.get("kind", "semantic")),
                "source": check_source(item.get("source", "manual")),
                "state": item.get("state", "active"),
                "reinforcements": int(item.get("reinforcements", 0)),
                "created_at": datetime.fromisoformat(item["created_at"]),
                "updated_at": datetime.fromisoformat(item["updated_at"]),
                "valid_to": (None if item.get("valid_to") is None
                             else datetime.fromisoformat(item["valid_to"])),
                "exported_id": _optional_id(item.get("id")),
                "superseded_by": _optional_id(item.get("superseded_by")),
                "history": history,
            })
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"{where} is malformed: {exc!r}") from exc
        if parsed[-1]["state"] not in ("active", "ephemeral", "archived"):
            raise InvalidInputError(f"{where}.state is not a lifecycle state")
    return parsed


def _optional_id(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected an id string, not {type(value).__name__}")
