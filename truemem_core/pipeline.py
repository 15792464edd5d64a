"""The request cycle: ``get_context`` before the LLM call, ``record`` after it,
and the background jobs that ``record`` leaves behind (extraction, summaries)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from sqlalchemy import select

from . import conversation
from .context import Context
from .embeddings import Vector
from .errors import InvalidInputError
from .extraction import (
    LLM,
    CandidateFact,
    detect_explicit,
    extract_facts,
    extract_with_llm,
    known_handle,
    summarize_extractive,
    summarize_with_llm,
)
from .memories import MemoryService
from .models import Memory, ScoredMemory, Source
from .recall import RecalledTurn, recall, store_embeddings
from .schema import jobs, utcnow
from .settings import Settings
from .store import Database
from .tokens import TokenCounter
from .validation import check_id, check_text

log = logging.getLogger("truemem.pipeline")
T = TypeVar("T")

_KNOWN_FACTS = 8  # stored facts shown to the LLM: enough to judge changes, cheap in tokens


@dataclass(frozen=True, slots=True)
class Recorded:
    """What ``record`` stored: the two message ids and the keys of the jobs it queued."""

    user_message_id: int
    assistant_message_id: int
    jobs: list[str]


@dataclass(frozen=True, slots=True)
class Job:
    key: str
    kind: str


class Pipeline:
    def __init__(
        self,
        db: Database,
        memories: MemoryService,
        tokens: TokenCounter,
        settings: Settings,
        llm: LLM | None,
    ) -> None:
        self.db = db
        self.memories = memories
        self.tokens = tokens
        self.settings = settings
        self.llm = llm
        self._background: set[asyncio.Future[None]] = set()

    # -- get context ------------------------------------------------------------

    async def get_context(
        self, user_id: Any, session_id: Any, message: Any, *, concurrent: bool = True
    ) -> Context:
        """Assemble summary, recent messages and relevant memories for ``message``.

        The independent steps (embed + search, load the session, detect and store
        explicit memories) run concurrently, so the cost is the slowest of them.
        """
        user = self.memories.user(user_id)
        session = check_id(session_id, "session_id", self.settings.max_id_chars)
        text = check_text(message, "message", self.settings.max_message_chars)
        timings: dict[str, float] = {}
        started = time.perf_counter()

        async def timed(name: str, step: Awaitable[T]) -> T:
            begin = time.perf_counter()
            try:
                return await step
            finally:
                timings[name] = round((time.perf_counter() - begin) * 1000, 3)

        async def retrieve() -> tuple[list[ScoredMemory], list[RecalledTurn]]:
            vector: Vector = (await timed("embed", self.memories.embed([text])))[0]
            return await asyncio.gather(
                timed("search", self.memories.search(user, text, vector=vector)),
                timed("recall", recall_turns(vector)))

        async def recall_turns(vector: Vector) -> list[RecalledTurn]:
            async with self.db.transaction(readonly=True) as conn:
                return await recall(
                    conn, self.db.backend, user, session, vector, k=self.settings.recall_k,
                    token_budget=self.settings.recall_token_budget,
                    min_score=self.settings.recall_min_score)

        async def load_session() -> conversation.SessionState:
            async with self.db.transaction(readonly=True) as conn:
                return await conversation.state(conn, user, session,
                                                self.settings.recent_messages)

        async def explicit() -> list[Memory]:
            facts = detect_explicit(text)
            return [
                await self.memories.add(user, fact.text, importance=5, source="explicit")
                for fact in facts
            ]

        steps = (retrieve(), timed("load_session", load_session()), timed("explicit", explicit()))
        if concurrent:
            (hits, recalled), state, stored = await asyncio.gather(*steps)
        else:
            (hits, recalled), state, stored = await steps[0], await steps[1], await steps[2]
        context = Context(
            user_id=user, session_id=session, message=text, summary=state.summary,
            recent_messages=state.recent, memories=hits, explicit=stored, recalled=recalled,
            timings=timings,
        )
        # Retrieval statistics feed adaptive importance; off the request path.
        touch = asyncio.ensure_future(self.memories.touch(user, [h.memory.id for h in hits]))
        self._background.add(touch)
        touch.add_done_callback(self._settled)
        tokens = sum(self.tokens.count(m["content"]) for m in context.to_messages())
        timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        return dataclasses.replace(context, tokens=tokens)

    def _settled(self, task: asyncio.Future[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not count a retrieval: %s", task.exception())

    async def settle(self) -> None:
        """Wait for the request path's background writes (retrieval counts)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    # -- record -----------------------------------------------------------------

    async def record(
        self, user_id: Any, session_id: Any, user_message: Any, assistant_message: Any
    ) -> tuple[Recorded, list[Job]]:
        """Store an exchange and the jobs it implies, in one transaction."""
        ids, queued = await self.record_messages(
            user_id, session_id, [("user", user_message), ("assistant", assistant_message)])
        return Recorded(ids[0], ids[1], [job.key for job in queued]), queued

    async def record_messages(
        self, user_id: Any, session_id: Any, turns: Sequence[tuple[str, Any]]
    ) -> tuple[list[int], list[Job]]:
        """Store messages in order; each user message gets an extraction job (with the
        reply that follows it), and a summary job is queued past the token threshold."""
        user = self.memories.user(user_id)
        session = check_id(session_id, "session_id", self.settings.max_id_chars)
        if not turns:
            raise InvalidInputError("no messages to record")
        items = []
        for role, content in turns:
            if role not in conversation.ROLES:
                raise InvalidInputError(f"role must be one of {conversation.ROLES}, got {role!r}")
            text = check_text(content, f"{role}_message", self.settings.max_message_chars)
            items.append((role, text, self.tokens.count(text)))
        async with self.db.transaction() as conn:
            ids = await conversation.append(conn, user, session, items)
            queued, payloads = [], []
            for n, (role, _, _) in enumerate(items):
                if role != "user":
                    continue
                reply = ids[n + 1] if n + 1 < len(ids) and items[n + 1][0] == "assistant" else None
                queued.append(Job(f"extract:{ids[n]}", "extract"))
                payloads.append({"user_message_id": ids[n], "assistant_message_id": reply})
            if queued:
                queued.append(Job(f"prune:{ids[-1]}", "prune"))
                payloads.append({})
            unsummarized = await conversation.unsummarized_tokens(conn, user, session)
            if unsummarized > self.settings.summary_token_threshold:
                queued.append(Job(f"summarize:{ids[-1]}", "summarize"))
                payloads.append({})
            now = utcnow()
            if queued:
                await conn.execute(jobs.insert(), [
                    {"key": job.key, "user_id": user, "kind": job.kind, "status": "pending",
                     "attempts": 0, "last_error": None, "created_at": now, "updated_at": now,
                     "payload": {"session_id": session, **payload}}
                    for job, payload in zip(queued, payloads, strict=True)
                ])
        return ids, queued

    async def session(self, user_id: Any, session_id: Any) -> conversation.SessionState:
        """The running summary and the recent messages of a session."""
        user = self.memories.user(user_id)
        session = check_id(session_id, "session_id", self.settings.max_id_chars)
        async with self.db.transaction(readonly=True) as conn:
            return await conversation.state(conn, user, session, self.settings.recent_messages)

    async def clear_session(self, user_id: Any, session_id: Any) -> None:
        """Forget a session's messages and summary (long-term memories stay)."""
        user = self.memories.user(user_id)
        session = check_id(session_id, "session_id", self.settings.max_id_chars)
        async with self.db.transaction() as conn:
            await conversation.clear(conn, user, session)

    # -- jobs --------------------------------------------------------------------

    async def run_job(self, key: str) -> None:
        """Run one pending job; skip it if it is done. Failures are recorded and re-raised."""
        async with self.db.transaction() as conn:
            job = (await conn.execute(select(jobs).where(jobs.c.key == key))).first()
        if job is None or job.status != "pending":
            return
        try:
            if job.kind == "extract":
                await self._extract(job)
            elif job.kind == "summarize":
                await self._summarize(job)
            elif job.kind == "prune":  # maintenance: dynamic scores, lifecycle states, pruning
                await self.memories.maintain(job.user_id)
                await self._finish(key)
            else:
                raise InvalidInputError(f"unknown job kind {job.kind!r}")
        except Exception as exc:
            attempts = job.attempts + 1
            failed = attempts > self.settings.job_max_retries
            async with self.db.transaction() as conn:
                await conn.execute(jobs.update().where(jobs.c.key == key).values(
                    attempts=attempts, last_error=f"{type(exc).__name__}: {exc}",
                    status="failed" if failed else "pending", updated_at=utcnow()))
            if failed:
                log.error("job %s failed for good after %d attempts", key, attempts,
                          exc_info=exc)
                return
            raise

    async def _finish(self, key: str, conn: Any = None) -> bool:
        """Mark a job done if it is still pending; False means someone else finished it."""
        stmt = (jobs.update().where(jobs.c.key == key, jobs.c.status == "pending")
                .values(status="done", updated_at=utcnow()))
        if conn is not None:
            return bool((await conn.execute(stmt)).rowcount)
        async with self.db.transaction() as own:
            return bool((await own.execute(stmt)).rowcount)

    async def _extract(self, job: Any) -> None:
        user, payload = job.user_id, job.payload
        async with self.db.transaction() as conn:
            said = await conversation.message(conn, user, payload["user_message_id"])
            reply_id = payload.get("assistant_message_id")
            answered = None if reply_id is None else await conversation.message(
                conn, user, reply_id)
        if said is None:  # the session was cleared meanwhile
            await self._finish(job.key)
            return
        turns = [said, *([answered] if answered else [])]
        vectors = await self.memories.embed([turn.content for turn in turns])
        # Read before the write transaction: the LLM call must not hold the user's lock.
        known = ([] if self.llm is None else
                 await self.memories.nearest_current(user, vectors[0], _KNOWN_FACTS))
        facts = await self._facts(said.content, answered.content if answered else "",
                                  [text for _, text in known])
        ids = {known_handle(n): memory_id for n, (memory_id, _) in enumerate(known)}
        async with self.db.transaction() as conn:
            if not await self._finish(job.key, conn):
                return  # a concurrent delivery got there first; its transaction wins
            await store_embeddings(conn, user, [turn.id for turn in turns], vectors)
            for fact, source in facts:
                try:
                    if source == "explicit":  # explicit requests bypass admission control
                        await self.memories.add(user, fact.text, importance=5, source=source,
                                                source_message_id=said.id, conn=conn)
                    else:
                        await self.memories.add_candidate(
                            user, fact.text, importance=min(fact.importance, 4),
                            kind=fact.kind, source_message_id=said.id, conn=conn,
                            supersedes=[ids[h] for h in fact.replaces if h in ids])
                except InvalidInputError as exc:
                    log.warning("dropped an extracted fact %r: %s", fact.text, exc)

    async def _facts(
        self, said: str, answered: str, known: Sequence[str]
    ) -> list[tuple[CandidateFact, Source]]:
        # Explicit requests are stored on the request path by get_context; seen
        # again here (dedup folds them) so that callers who only record keep them too.
        found: list[tuple[CandidateFact, Source]] = [
            (fact, "explicit") for fact in detect_explicit(said)]
        if self.llm is None:
            extracted = extract_facts(said)
        else:
            extracted = await extract_with_llm(self.llm, said, answered, known)
        return found + [(fact, "extracted") for fact in extracted]

    async def _summarize(self, job: Any) -> None:
        user, session = job.user_id, job.payload["session_id"]
        async with self.db.transaction() as conn:
            state = await conversation.state(conn, user, session, 0)
            folding = await conversation.to_fold(conn, user, session,
                                                 self.settings.recent_messages)
        if not folding:
            await self._finish(job.key)
            return
        turns = [(m.role, m.content) for m in folding]
        if self.llm is None:
            summary = summarize_extractive(state.summary, turns)
        else:
            summary = await summarize_with_llm(self.llm, state.summary, turns)
        async with self.db.transaction() as conn:
            if await self._finish(job.key, conn):
                await conversation.fold(
                    conn, user, session, expected_through=state.summarized_through,
                    summary=summary, message_ids=[m.id for m in folding])

    async def pending(self, older_than: float = 0.0, limit: int = 500) -> list[Job]:
        """Pending jobs not touched for ``older_than`` seconds (for the sweep)."""
        cutoff = utcnow() - timedelta(seconds=older_than)
        async with self.db.transaction(readonly=True) as conn:
            rows = await conn.execute(
                select(jobs.c.key, jobs.c.kind)
                .where(jobs.c.status == "pending", jobs.c.updated_at <= cutoff)
                .order_by(jobs.c.created_at).limit(limit))
            return [Job(row.key, row.kind) for row in rows]

    async def unfinished(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        async with self.db.transaction(readonly=True) as conn:
            rows = await conn.execute(select(jobs.c.key).where(
                jobs.c.key.in_(list(keys)), jobs.c.status == "pending"))
            return {row.key for row in rows}

