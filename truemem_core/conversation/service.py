"""``Conversation``, the turn: ``get_context`` before the LLM call, ``record`` after it.

``get_context`` runs its independent steps at once (embed, then search the
memories and the past turns; load the session and the critical memories; detect
and store explicit requests), so it costs the slowest of them. What retrieval
found is then packed into one token budget (``packing``). ``record`` stores the
messages and the jobs they imply in one transaction; the jobs run later (``jobs/``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from truemem_core._validation import (
    check_id,
    check_instant,
    check_k,
    check_recorded,
    check_text,
    says_nothing,
)
from truemem_core.conversation import recording, sessions, timeline
from truemem_core.conversation.packing import pack
from truemem_core.conversation.retrieval_counts import RetrievalCounts
from truemem_core.embeddings import TokenCounter, Vector, compute
from truemem_core.embeddings.tokens import CachedCounter
from truemem_core.errors import InvalidInputError
from truemem_core.language import (
    asks_about_the_user,
    asks_for_timeline,
    detect_explicit,
    topic_of,
)
from truemem_core.memory import reads
from truemem_core.memory.service import MemoryService
from truemem_core.records import (
    ROLES,
    Context,
    Memory,
    RecalledTurn,
    Recorded,
    ScoredMemory,
    ScoredSynthesis,
    SessionInfo,
    SessionState,
    Synthesis,
)
from truemem_core.search import hop
from truemem_core.search.filters import Mode
from truemem_core.search.recall import recall
from truemem_core.settings import Settings
from truemem_core.storage.database import Database
from truemem_core.synthesis import store as synthesis_store

log = logging.getLogger("truemem.conversation")
T = TypeVar("T")

# Text work on shorter texts runs inline: it costs about what the hop to a thread does.
_COUNT_INLINE_CHARS = 1_000  # token counting: about a tenth of a millisecond of tiktoken
_PACK_INLINE_CHARS = 8_000  # a context's texts: about half a millisecond, less than a hop
_DETECT_INLINE_CHARS = 200  # "remember that ..." detection: half a millisecond at most


async def _together(*steps: Awaitable[Any]) -> list[Any]:
    """Run steps at once; if one fails, let the others finish, then raise the first
    failure. (``asyncio.gather`` raises at once and leaves the rest running on a loop
    that may be closing; cancelling them mid-connect strands the driver's thread.)"""
    results = await asyncio.gather(*steps, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


async def _inline_unless(long: bool, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` on the event loop, or in a thread when ``long``: the hop to a
    thread and back costs more than short text work, and long work would hold up every
    other call on the loop."""
    return await asyncio.to_thread(function, *args) if long else function(*args)


def _chars(found: Context) -> int:
    """The characters ``_assemble`` may count: the texts that go into the context (the
    recent turns were counted when they were recorded; the messages the system prompt
    holds instead, a greeting or an instruction, are counted there)."""
    return (len(found.message) + len(found.summary or "")
            + sum(len(hit.memory.text) for hit in found.memories)
            + sum(len(memory.text) for memory in (*found.explicit, *found.critical))
            + sum(len(turn.content) for turn in found.recalled)
            + sum(len(hit.synthesis.text) for hit in found.syntheses)
            + sum(len(m.content) for m in found.recent_messages)
            - sum(len(m.content) for m in found.turns))


class _Timings(dict[str, float]):
    """Milliseconds per step, filled in as the steps finish."""

    async def time(self, name: str, step: Awaitable[T]) -> T:
        began = time.perf_counter()
        try:
            return await step
        finally:
            self[name] = round((time.perf_counter() - began) * 1000, 3)


class Conversation:
    def __init__(
        self,
        db: Database,
        memories: MemoryService,
        tokens: TokenCounter,
        settings: Settings,
        on_queued: Callable[[list[str]], None],
    ) -> None:
        self.db = db
        self.memories = memories
        self.tokens = CachedCounter(tokens)  # contexts count the same texts call after call
        self.settings = settings
        self.on_queued = on_queued  # hands the keys of committed jobs to the dispatcher
        self.counts = RetrievalCounts(memories)

    def _check(self, user_id: Any, session_id: Any) -> tuple[str, str]:
        return (self.memories.check_user(user_id),
                check_id(session_id, "session_id", self.settings.max_id_chars))

    def _check_message(self, value: Any, what: str) -> str:
        return check_text(value, what, self.settings.max_message_chars,
                          setting="max_message_chars")

    # -- get context ----------------------------------------------------------

    async def get_context(self, user_id: Any, session_id: Any, message: Any) -> Context:
        """Summary, recent messages, and the memories and past turns that best match
        ``message`` within ``context_token_budget``; the user's critical
        (importance-5) memories whatever the message."""
        user, session = self._check(user_id, session_id)
        text = self._check_message(message, "message")
        timings = _Timings()
        began = time.perf_counter()
        spread = self.settings.timeline_recall and asks_for_timeline(text)
        (hits, turns, summaries), (state, critical), stored = await _together(
            self._retrieve(user, session, text, timings, wide=spread),
            timings.time("load_session", self._load_standing(user, session)),
            timings.time("explicit", self._store_explicit(user, text)),
        )
        found = Context(
            user_id=user, session_id=session, message=text, summary=state.summary,
            recent_messages=state.recent, memories=hits, explicit=stored, recalled=turns,
            critical=critical, timings=timings, timeline=spread, syntheses=summaries)
        context, tokens = await timings.time("pack", _inline_unless(
            _chars(found) > _PACK_INLINE_CHARS, self._assemble, found))
        self.counts.add(user, [hit.memory.id for hit in context.memories])
        timings["total"] = round((time.perf_counter() - began) * 1000, 3)
        return dataclasses.replace(context, tokens=tokens)

    def _assemble(self, found: Context) -> tuple[Context, int]:
        """``found`` with its retrieved facts and turns packed into the budget, and the
        token count of the whole context."""
        spread, latest = found.timeline, self.settings.latest_first
        packed = pack(found.memories, found.recalled, always=[*found.explicit, *found.critical],
                      budget=self.settings.context_token_budget,
                      turn_tokens=timeline.turn_tokens(self.settings.recall_turn_tokens, spread),
                      count=self.tokens.count, syntheses=found.syntheses,
                      order=partial(timeline.arrange, latest=latest, timeline=spread))
        served: list[ScoredMemory | RecalledTurn] = [*packed.memories, *packed.recalled]
        context = dataclasses.replace(
            found, memories=packed.memories, recalled=packed.recalled, budget_spent=packed.spent,
            syntheses=packed.syntheses,
            restated=timeline.restated(served) if latest else frozenset())
        # what ``to_messages`` renders; the recent turns were counted when recorded
        # (each can be 100,000 characters, and a session serves twenty of them)
        tokens = (self.tokens.count_lines(context.to_system_prompt())
                  + sum(m.tokens for m in context.turns)
                  + self.tokens.count(context.message))
        return context, tokens

    async def _retrieve(
        self, user: str, session: str, text: str, timings: _Timings, *, wide: bool = False
    ) -> tuple[list[ScoredMemory], list[RecalledTurn], list[ScoredSynthesis]]:
        # The searches run their lexical channels while the message is embedded. A wide
        # search (a timeline's) ranks more of each, to spread over time, by what the
        # message is about ("in what order did I…" matches every turn that says "order").
        more = timeline.SPREAD_WIDER if wide else 1
        speaker = "user" if asks_about_the_user(text) else None  # before topic_of drops "I"
        text = topic_of(text) if wide else text
        async with compute.meanwhile(self._embed(text, timings)) as vector:
            hits, recalled, summaries = await _together(
                timings.time("search", self.memories.search(
                    user, text, k=self.settings.search_k * more, vector=vector)),
                timings.time("recall", self._recall(
                    user, session, text, vector, k=self.settings.recall_k * more,
                    speaker=speaker)),
                timings.time("syntheses", self._syntheses(user, session, text, vector)))
            if self.settings.weight_hop > 0:
                hits, recalled = await timings.time("hop", self._hop(
                    user, session, text, vector, hits, recalled, speaker))
        return hits, recalled, summaries

    async def _hop(
        self, user: str, session: str, text: str, vector: Awaitable[Vector],
        hits: list[ScoredMemory], recalled: list[RecalledTurn], speaker: str | None,
    ) -> tuple[list[ScoredMemory], list[RecalledTurn]]:
        """The second hop (``search.hop``): one keyword search of the memories and one of
        the past turns, at once, for the words of the first step's best results."""
        found: list[ScoredMemory | RecalledTurn] = [*hits, *recalled]
        best = sorted(found, key=lambda item: -item.score)[: hop.SEEDS]
        query = hop.hop_query(text, [item.memory.text if isinstance(item, ScoredMemory)
                                     else item.content for item in best])
        if not query:
            return hits, recalled
        depth = self.settings.rrf_depth
        more_hits, more_turns = await _together(
            self.memories.search(user, query, k=depth, mode="keyword"),
            self._recall(user, session, query, vector, mode="keyword", k=depth,
                         speaker=speaker))
        # a seed is not ranked again by its own words, nor is what says the same thing:
        # a seed fact's source turn, a seed turn's facts
        facts = {item.memory.id: item.memory.source_message_id for item in best
                 if isinstance(item, ScoredMemory)}
        turns = {item.message_id for item in best if isinstance(item, RecalledTurn)}
        join = functools.partial(hop.join, weight=self.settings.weight_hop,
                                 rrf_k=self.settings.rrf_k, ceiling=best[-1].score)
        return (join(hits, more_hits, lambda h: h.memory.id, seeds=[
                    *facts, *(h.memory.id for h in more_hits
                              if h.memory.source_message_id in turns)]),
                join(recalled, more_turns, lambda t: t.message_id,
                     seeds=[*turns, *(n for n in facts.values() if n is not None)]))

    async def _embed(self, text: str, timings: _Timings) -> Vector:
        return await timings.time("embed", self.memories.embed_query(text))

    async def _recall(
        self, user: str, session: str, text: str, vector: Awaitable[Vector], *,
        mode: Mode = "hybrid", k: int | None = None, speaker: str | None = None,
    ) -> list[RecalledTurn]:
        settings = self.settings if k is None else self.settings.replace(recall_k=k)
        async with self.db.autocommit() as conn:
            return await recall(conn, self.memories.deps.channels, user, session, text, vector,
                                settings, mode=mode, speaker=speaker)

    async def _syntheses(
        self, user: str, session: str, text: str, vector: Awaitable[Vector]
    ) -> list[ScoredSynthesis]:
        async with self.db.autocommit() as conn:
            return await synthesis_store.search(conn, self.memories.deps.channels, user,
                                                session, text, vector, self.settings)

    async def _load_standing(self, user: str, session: str) -> tuple[SessionState, list[Memory]]:
        """What does not depend on the message: the session and the critical memories."""
        async with self.db.autocommit() as conn:
            return (await sessions.state(conn, user, session, self.settings.recent_messages),
                    await reads.critical(conn, user, self.settings.critical_limit))

    async def _load_session(self, user: str, session: str, recent: int) -> SessionState:
        async with self.db.transaction(readonly=True) as conn:
            return await sessions.state(conn, user, session, recent)

    async def _store_explicit(self, user: str, text: str) -> list[Memory]:
        # A long message is read in a thread: it never holds up other users' calls.
        stored = []
        found = await _inline_unless(len(text) > _DETECT_INLINE_CHARS, detect_explicit, text)
        for fact in found:
            try:
                stored.append(await self.memories.add(
                    user, fact.text, importance=5, source="explicit"))
            except InvalidInputError as exc:  # e.g. longer than max_text_chars: not a fact
                log.warning("did not store an explicit request: %s", exc)
        return stored

    # -- record -----------------------------------------------------------------

    async def record(
        self, user_id: Any, session_id: Any, user_message: Any, assistant_message: Any
    ) -> Recorded:
        """Store an exchange and the jobs it implies, at once (``recording``). The user
        message must say something; a reply with no visible character (a tool-calling
        model's) is not stored (``assistant_message_id`` None)."""
        self._check_message(user_message, "user_message")
        ids, jobs = await self._record(
            user_id, session_id, [("user", user_message), ("assistant", assistant_message)])
        assert ids[0] is not None
        return Recorded(ids[0], ids[1], jobs)

    async def record_messages(
        self, user_id: Any, session_id: Any, turns: Sequence[tuple[Any, ...]]
    ) -> list[int | None]:
        """Store ``(role, content)`` or ``(role, content, said_at)`` messages in order;
        returns their ids, None for a message with no visible character, which is skipped.
        ``said_at`` (a timezone-aware datetime) dates a message recorded after the fact,
        e.g. imported history; by default, now."""
        return (await self._record(user_id, session_id, turns))[0]

    async def _record(
        self, user_id: Any, session_id: Any, turns: Sequence[tuple[Any, ...]]
    ) -> tuple[list[int | None], list[str]]:
        """The ids of ``turns`` (None: skipped) and the keys of the jobs queued."""
        user, session = self._check(user_id, session_id)
        checked = self._check_turns(turns)
        items = [item for item in checked if item is not None]
        if len(items) < len(checked):
            log.info("skipped %d of %d messages with no visible character",
                     len(checked) - len(items), len(checked))
        if not items:
            return [None] * len(checked), []
        texts = [item.content for item in items]
        # counting a chat message's tokens takes microseconds; long texts take
        # milliseconds, and those are counted off the event loop
        counts = await _inline_unless(sum(map(len, texts)) > _COUNT_INLINE_CHARS,
                                      self._count, texts)
        items = [item._replace(tokens=n) for item, n in zip(items, counts, strict=True)]
        # one statement on PostgreSQL (on its own: one round trip), three on SQLite
        async with (self.db.autocommit() if self.db.dialect == "postgresql"
                    else self.db.transaction()) as conn:
            written = await recording.write(
                conn, user, session, items,
                summary_threshold=self.settings.summary_token_threshold,
                maintain_interval_s=self.settings.maintain_interval_s)
        self.on_queued(written.jobs)
        stored = iter(written.ids)
        return [None if item is None else next(stored) for item in checked], written.jobs

    def _check_turns(self, turns: Any) -> list[recording.NewMessage | None]:
        """Each turn checked, None for one with no visible character (to skip)."""
        if isinstance(turns, str | bytes) or not isinstance(turns, Sequence) or not turns:
            raise InvalidInputError("messages must be a non-empty sequence of (role, content)")
        items: list[recording.NewMessage | None] = []
        for turn in turns:
            if not isinstance(turn, Sequence) or isinstance(turn, str) or len(turn) not in (2, 3):
                raise InvalidInputError(
                    f"a message must be (role, content) or (role, content, said_at): {turn!r}")
            role, content, said_at = (*turn, None)[:3]
            if role not in ROLES:
                raise InvalidInputError(f"role must be one of {ROLES}, got {role!r}")
            if said_at is not None:  # said earlier: never later than now
                check_recorded(check_instant(said_at, "said_at"), "said_at")
            # (an oversized text is refused below, before any of it is read)
            if isinstance(content, str) and len(content) <= self.settings.max_message_chars \
                    and says_nothing(content):
                items.append(None)
                continue
            text = self._check_message(content, f"{role}_message")
            items.append(recording.NewMessage(role, text, 0, said_at))
        return items

    def _count(self, texts: list[str]) -> list[int]:
        return [self.tokens.count(text) for text in texts]

    # -- sessions ---------------------------------------------------------------

    async def session(self, user_id: Any, session_id: Any, recent: Any = None) -> SessionState:
        """The running summary and the last ``recent`` messages of a session (by default
        the ``recent_messages`` a context serves)."""
        user, session = self._check(user_id, session_id)
        return await self._load_session(user, session, self.settings.recent_messages
                                        if recent is None else check_k(recent, "recent"))

    async def sessions(self, user_id: Any) -> list[SessionInfo]:
        """The user's sessions, the one with the latest message first."""
        user = self.memories.check_user(user_id)
        async with self.db.autocommit() as conn:
            return await sessions.listed(conn, user)

    async def syntheses(self, user_id: Any) -> list[Synthesis]:
        """The user's syntheses, the earliest first."""
        user = self.memories.check_user(user_id)
        async with self.db.autocommit() as conn:
            return await synthesis_store.listed(conn, user)

    async def clear_session(self, user_id: Any, session_id: Any) -> None:
        """Forget a session's messages, summary and synthesis (long-term memories stay)."""
        user, session = self._check(user_id, session_id)
        async with self.db.writing(user) as conn:
            await sessions.clear(conn, user, session)
