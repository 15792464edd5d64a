"""What each kind of job does: extract facts, fold a summary, maintain the memories.

A handler marks its job done in the same transaction as its effects, so a job
delivered twice changes nothing the second time; slow work (embedding, the
LLM) happens before that transaction opens, holding no lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.conversation import passages, sessions
from truemem_core.embeddings import Vector
from truemem_core.errors import InvalidInputError
from truemem_core.graph.extraction import store_graph
from truemem_core.graph.superseded import end_with_their_memories
from truemem_core.language import (
    LLM,
    CandidateFact,
    detect_explicit,
    extract_facts,
    extract_with_llm,
    known_handle,
    quoting,
    summarize_extractive,
    summarize_with_llm,
)
from truemem_core.memory import maintenance, write
from truemem_core.memory.service import MemoryService
from truemem_core.records import Message, Source
from truemem_core.search.recall import store_embeddings
from truemem_core.settings import Settings
from truemem_core.storage import outbox, text_indexes
from truemem_core.storage.database import Database
from truemem_core.storage.schema import utcnow
from truemem_core.synthesis import store as syntheses
from truemem_core.synthesis.extractive import MIN_MESSAGES, Drawn, Said, synthesize
from truemem_core.synthesis.written import synthesize_with_llm

log = logging.getLogger("truemem.jobs")

SECOND_HAND_IMPORTANCE = 2  # the most an LLM fact from an exchange with pasted text gets
_KNOWN_FACTS = 8  # stored facts shown to the LLM: enough to judge changes, cheap in tokens
AHEAD_MESSAGES = 32  # the session's messages an extraction reads to embed ahead
AHEAD_TOKENS = 16_000  # ...and the most tokens it embeds at once: a few model batches
_NONE = np.zeros((0, 0), dtype=np.float32)


@dataclass(frozen=True, slots=True)
class _Embedded:
    """Messages' vectors and the passages of their long ones with theirs, in order."""

    turns: list[Message]
    vectors: Vector
    cuts: list[tuple[Message, list[passages.Passage]]]
    passage_vectors: Vector

    def of(self, message_id: int) -> Vector:
        vector: Vector = self.vectors[[turn.id for turn in self.turns].index(message_id)]
        return vector

    async def store(self, conn: AsyncConnection, user: str, model_name: str) -> None:
        await store_embeddings(conn, user, [turn.id for turn in self.turns], self.vectors,
                               model_name)
        await passages.store(conn, user, self.cuts, self.passage_vectors, model_name)


@dataclass(frozen=True, slots=True)
class Handlers:
    db: Database
    memories: MemoryService
    settings: Settings
    llm: LLM | None

    async def extract(self, job: Any) -> None:
        """Facts from a user message (and its reply) into long-term memory; both turns
        get their embeddings, so conversation recall can find them, and so do the
        session's next messages still without one (``_ahead``)."""
        user, payload = job.user_id, job.payload
        async with self.db.transaction(readonly=True) as conn:
            said = await sessions.message(conn, user, payload["user_message_id"])
            reply_id = payload.get("assistant_message_id")
            answered = None if reply_id is None else await sessions.message(conn, user, reply_id)
            waiting, todo = (False, []) if said is None else await sessions.unembedded(
                conn, user, payload["session_id"], said.id, AHEAD_MESSAGES)
            # embedded ahead by an earlier job: the LLM's known facts are found by its vector
            vector = (await sessions.vector(conn, user, said.id) if said is not None
                      and self.llm is not None and all(m.id != said.id for m in todo) else None)
        if said is None:  # the session was cleared meanwhile
            await self._finish(job.key)
            return
        turns = [said, *([answered] if answered else [])]
        embedded = await self._embedded(self._ahead(turns, todo, waiting))
        # Read before the write transaction: the LLM call must not hold the user's lock.
        known = ([] if self.llm is None else await self.memories.nearest_current(
            user, embedded.of(said.id) if vector is None else vector, _KNOWN_FACTS))
        facts = await self._facts(said.content, answered.content if answered else "",
                                  [text for _, text in known])
        handles = {known_handle(n): memory_id for n, (memory_id, _) in enumerate(known)}
        candidates = []
        for fact, source in facts:
            try:
                candidates.append((fact, source, await self.memories.candidate(
                    user, fact.text, source=source, source_message_id=said.id,
                    importance=5 if source == "explicit" else min(fact.importance, 4),
                    kind=None if source == "explicit" else fact.kind,
                    supersedes=[handles[h] for h in fact.replaces if h in handles],
                    said_at=said.created_at)))  # true from when it was said, not from now
            except InvalidInputError as exc:
                log.warning("dropped an extracted fact %r: %s", fact.text, exc)
        async with self.db.writing(user) as conn:
            if not await outbox.finish(conn, job.key):
                return  # done by a concurrent delivery, or the user was erased
            await embedded.store(conn, user, self.memories.embedder.model_name)
            for fact, source, candidate in candidates:
                # explicit requests bypass admission control
                stored = await write.add(conn, self.memories.deps, candidate,
                                         admit=source != "explicit")
                if stored is not None:
                    await store_graph(conn, user, fact.text, fact.graph, memory_id=stored.id,
                                      message_id=said.id, said_at=said.created_at, now=utcnow())
                    # what the new facts did not replace ends with the memories it closed
                    await end_with_their_memories(conn, user, [stored.id], said.created_at)
            # every exchange's writes split SQLite's full-text indexes: a bounded step
            # merges them while the lock is held anyway (maintenance is not per exchange)
            await text_indexes.merge(conn)

    async def _facts(
        self, said: str, answered: str, known: Sequence[str]
    ) -> list[tuple[CandidateFact, Source]]:
        # Explicit requests are stored on the request path by get_context; seen
        # again here (dedup folds them) so that callers who only record keep them too.
        # The rules run in a thread: a long message never holds up other users' calls.
        found: list[tuple[CandidateFact, Source]] = [
            (fact, "explicit") for fact in await asyncio.to_thread(detect_explicit, said)]
        if self.llm is None:  # the rules read only the user's own words
            extracted = await asyncio.to_thread(extract_facts, said)
        else:
            # The LLM reads no pasted block; it does read quotations and the reply, which
            # may restate what was pasted: facts from such an exchange are kept low.
            reading = await asyncio.to_thread(quoting.read, said)
            extracted = await extract_with_llm(self.llm, reading.text, answered, known)
            if reading.second_hand:
                extracted = [dataclasses.replace(fact, importance=min(
                    fact.importance, SECOND_HAND_IMPORTANCE)) for fact in extracted]
        return found + [(fact, "extracted") for fact in extracted]

    async def summarize(self, job: Any) -> None:
        """Fold the session's older messages into its running summary."""
        user, session = job.user_id, job.payload["session_id"]
        async with self.db.transaction(readonly=True) as conn:
            state = await sessions.state(conn, user, session, 0)
            folding = await sessions.to_fold(conn, user, session, self.settings.recent_messages)
        if not folding:
            await self._finish(job.key)
            return
        turns = [(m.role, m.content) for m in folding]
        if self.llm is None:
            summary = await asyncio.to_thread(summarize_extractive, state.summary, turns)
        else:
            summary = await summarize_with_llm(self.llm, state.summary, turns)
        async with self.db.writing(user) as conn:
            if await outbox.finish(conn, job.key):
                await sessions.fold(
                    conn, user, session, expected_through=state.summarized_through,
                    summary=summary, message_ids=[m.id for m in folding])

    async def embed(self, job: Any) -> None:
        """Embed messages no extraction covers (replies without a user message before
        them, system messages), so recall finds them by meaning too; those an extraction
        embedded ahead are done."""
        user = job.user_id
        async with self.db.transaction(readonly=True) as conn:
            found = await sessions.unembedded_of(conn, user, job.payload["message_ids"])
        embedded = await self._embedded(found)
        async with self.db.writing(user) as conn:
            if await outbox.finish(conn, job.key):
                await embedded.store(conn, user, self.memories.embedder.model_name)

    def _ahead(
        self, turns: Sequence[Message], todo: Sequence[Message], waiting: bool,
    ) -> list[Message]:
        """What an extraction embeds: those of its ``turns`` still without a vector, then
        the next of the session's messages without one (``todo``, in order) up to
        ``AHEAD_TOKENS``. The model's cost is in its batches, padded to their longest
        text: many messages in one call are sorted by length into batches of like lengths
        (a bulk import's exchanges one by one padded BEAM's passages to ~1.5x their
        tokens, ~1.1x this way); their own jobs then find them done.

        Not ahead while a user message shortly before is ``waiting`` for its vector: its
        job, running now on another thread or worker, is embedding this stretch (two
        jobs at once embed side by side windows, not the same one twice)."""
        own = {turn.id for turn in turns}
        mine = [m for m in todo if m.id in own]
        # Its own turns embedded by an earlier job: the next job with turns to embed reads
        # ahead (windows side by side, one call each, not sliding: one call a job).
        if waiting or not mine:
            return mine
        budget = AHEAD_TOKENS - sum(m.tokens for m in mine)
        for message in todo:
            if message.id in own:
                continue
            if message.tokens > budget:
                break
            mine.append(message)
            budget -= message.tokens
        return mine

    async def _embedded(self, turns: Sequence[Message]) -> _Embedded:
        """The turns' vectors, the long ones' passages and the passages' vectors, made in
        one batch (``conversation.passages``)."""
        if not turns:
            return _Embedded([], _NONE, [], _NONE)
        vectors, parts, passage_vectors = await passages.embed_messages(
            [(turn.content, turn.tokens) for turn in turns], self.settings, self.memories.embed)
        return _Embedded(list(turns), vectors, list(zip(turns, parts, strict=True)),
                         passage_vectors)

    async def synthesize(self, job: Any) -> None:
        """Rebuild the syntheses of the session's stretches its record added to: from the
        stretch of the record's first message to the last (one stretch for an exchange;
        every one for a session recorded at once, or a job queued before stretches). A
        stretch a later record added to is that record's job's to rebuild (during a bulk
        import only the last record of a stretch pays for it)."""
        user, session = job.user_id, job.payload["session_id"]
        since, last = job.payload.get("from_message_id"), int(job.key.partition(":")[2])
        async with self.db.transaction(readonly=True) as conn:
            stretches = await syntheses.parts(conn, user, session)
            touched = [n for n, ids in enumerate(stretches)
                       if (since is None or ids[-1] >= since) and ids[-1] <= last]
            said = await syntheses.said(conn, user, [i for n in touched for i in stretches[n]])
        by_id = {message.id: message for message in said}
        drawn = [await self._drawn([by_id[i] for i in stretches[n] if i in by_id])
                 for n in touched]
        texts = [d.text for d in drawn if d.text]
        vectors: Iterator[Vector] = iter(await self.memories.embed(texts) if texts else [])
        async with self.db.writing(user) as conn:
            if not await outbox.finish(conn, job.key):
                return
            now = await syntheses.parts(conn, user, session)
            for n, found in zip(touched, drawn, strict=True):
                vector = next(vectors) if found.text else None
                # written only over what it read: a stretch a later record added to (or a
                # session cleared meanwhile) is the later job's (or the clear's) to settle
                if n < len(now) and now[n] == stretches[n]:
                    await syntheses.save(conn, user, syntheses.SESSION, session, found, vector,
                                         self.memories.embedder.model_name, part=n)

    async def _drawn(self, said: list[Said]) -> Drawn:
        """One stretch's synthesis: by the LLM if one is set, else (or if it fails) the
        offline one; none (no text) for a stretch too short to need one."""
        if len(said) < MIN_MESSAGES:
            return Drawn("", [], None, None)
        written = None if self.llm is None else await synthesize_with_llm(self.llm, said)
        return written if written is not None else await asyncio.to_thread(synthesize, said)

    async def maintain(self, job: Any) -> None:
        """Dynamic scores, lifecycle states and pruning for the job's user: queued by
        ``record`` at most once a ``maintain_interval_s`` (``conversation.recording``)."""
        async with self.db.writing(job.user_id) as conn:
            if await outbox.finish(conn, job.key):
                await maintenance.maintain(conn, self.memories.deps, job.user_id)

    async def _finish(self, key: str) -> None:
        async with self.db.transaction() as conn:
            await outbox.finish(conn, key)
