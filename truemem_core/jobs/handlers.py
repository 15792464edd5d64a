"""What each kind of job does: extract facts, fold a summary, maintain the memories.

A handler marks its job done in the same transaction as its effects, so a job
delivered twice changes nothing the second time; slow work (embedding, the
LLM) happens before that transaction opens, holding no lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
from truemem_core.synthesis.extractive import MIN_MESSAGES, synthesize
from truemem_core.synthesis.written import synthesize_with_llm

log = logging.getLogger("truemem.jobs")

SECOND_HAND_IMPORTANCE = 2  # the most an LLM fact from an exchange with pasted text gets
_KNOWN_FACTS = 8  # stored facts shown to the LLM: enough to judge changes, cheap in tokens


@dataclass(frozen=True, slots=True)
class Handlers:
    db: Database
    memories: MemoryService
    settings: Settings
    llm: LLM | None

    async def extract(self, job: Any) -> None:
        """Facts from a user message (and its reply) into long-term memory; both turns
        get their embeddings, so conversation recall can find them."""
        user, payload = job.user_id, job.payload
        async with self.db.transaction(readonly=True) as conn:
            said = await sessions.message(conn, user, payload["user_message_id"])
            reply_id = payload.get("assistant_message_id")
            answered = None if reply_id is None else await sessions.message(conn, user, reply_id)
        if said is None:  # the session was cleared meanwhile
            await self._finish(job.key)
            return
        turns = [said, *([answered] if answered else [])]
        vectors, cuts, passage_vectors = await self._embedded(turns)
        # Read before the write transaction: the LLM call must not hold the user's lock.
        known = ([] if self.llm is None else
                 await self.memories.nearest_current(user, vectors[0], _KNOWN_FACTS))
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
            await store_embeddings(conn, user, [turn.id for turn in turns], vectors,
                                   self.memories.embedder.model_name)
            await passages.store(conn, user, cuts, passage_vectors,
                                 self.memories.embedder.model_name)
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
        them, system messages), so recall finds them by meaning too."""
        user = job.user_id
        async with self.db.transaction(readonly=True) as conn:
            found = [m for i in job.payload["message_ids"]
                     if (m := await sessions.message(conn, user, i)) is not None]
        vectors, cuts, passage_vectors = await self._embedded(found)
        async with self.db.writing(user) as conn:
            if await outbox.finish(conn, job.key):
                await store_embeddings(conn, user, [m.id for m in found], vectors,
                                       self.memories.embedder.model_name)
                await passages.store(conn, user, cuts, passage_vectors,
                                     self.memories.embedder.model_name)

    async def _embedded(
        self, turns: Sequence[Message]
    ) -> tuple[Vector, list[tuple[Message, list[passages.Passage]]], Vector]:
        """The turns' vectors, the long ones' passages and the passages' vectors, made in
        one batch (``conversation.passages``)."""
        vectors, parts, passage_vectors = await passages.embed_messages(
            [(turn.content, turn.tokens) for turn in turns], self.settings, self.memories.embed)
        return vectors, list(zip(turns, parts, strict=True)), passage_vectors

    async def synthesize(self, job: Any) -> None:
        """Rebuild the session's synthesis from its user messages. The job of the record
        that added the session's latest user message does it; an earlier one has nothing
        to do (during a bulk import only the last of a session's records pays for it)."""
        user, session = job.user_id, job.payload["session_id"]
        async with self.db.transaction(readonly=True) as conn:
            newest = await syntheses.newest_said(conn, user, session)
            if newest is not None and newest > int(job.key.partition(":")[2]):
                said = None  # a later record's job rebuilds it
            else:
                said = await syntheses.said_in_session(conn, user, session)
        if said is None:
            await self._finish(job.key)
            return
        said = said if len(said) >= MIN_MESSAGES else []  # an empty synthesis: none
        drawn = None if self.llm is None or not said else \
            await synthesize_with_llm(self.llm, said)
        if drawn is None:
            drawn = await asyncio.to_thread(synthesize, said)
        vector = (await self.memories.embed([drawn.text]))[0] if drawn.text else None
        async with self.db.writing(user) as conn:
            # written only over what it read: a session cleared (or added to) meanwhile
            # is the clear's (or the later job's) to settle
            if await outbox.finish(conn, job.key) and \
                    await syntheses.newest_said(conn, user, session) == newest:
                await syntheses.save(conn, user, syntheses.SESSION, session, drawn, vector,
                                     self.memories.embedder.model_name)

    async def maintain(self, job: Any) -> None:
        """Dynamic scores, lifecycle states and pruning for the job's user: queued by
        ``record`` at most once a ``maintain_interval_s`` (``conversation.recording``)."""
        async with self.db.writing(job.user_id) as conn:
            if await outbox.finish(conn, job.key):
                await maintenance.maintain(conn, self.memories.deps, job.user_id)

    async def _finish(self, key: str) -> None:
        async with self.db.transaction() as conn:
            await outbox.finish(conn, key)
