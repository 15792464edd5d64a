"""The write path of a fact: dedup, supersession, admission, insert, then pruning.

Everything runs inside the caller's transaction (``conn``), under the user's lock.
What to write is decided by pure functions of the rows read (``pick_duplicates``,
``closes``, ``admission_of``, ``fold``, ``new_row`` and the event builders), shared
with the bulk path (``memory.bulk``), which applies the same decisions to a batch.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.graph import erasure as graph_erasure
from truemem_core.language.gist import gist
from truemem_core.memory import items, rows
from truemem_core.memory.admission import Admission, score_candidate
from truemem_core.memory.decision import adds_nothing, decide
from truemem_core.memory.dedup import centroid, merge
from truemem_core.memory.deps import MemoryDeps
from truemem_core.memory.maintenance import prune_excess
from truemem_core.records import Kind, Memory, Source
from truemem_core.search.channels import memories_of
from truemem_core.settings import Settings
from truemem_core.storage.schema import admission_rejections, memories, utcnow

log = logging.getLogger("truemem.memory")

NEAREST = 20  # nearest memories checked for duplicates and superseded facts


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """A validated fact with its vector, ready to be written."""

    user: str
    text: str
    importance: int
    kind: Kind
    source: Source
    source_message_id: int | None
    vector: Vector
    supersedes: tuple[str, ...] = ()  # ids an LLM judged this fact to replace, unchecked
    said_at: datetime | None = None  # when its message was said; None: now


async def add(
    conn: AsyncConnection, deps: MemoryDeps, new: Candidate, *, admit: bool
) -> Memory | None:
    """Store ``new``, or fold it into a near-duplicate; prune past the soft limit.

    A fact that supersedes a stored one closes the old one's validity. With
    ``admit``, a new fact scoring below the admission threshold is not stored
    (None) and its rejection is recorded. The caller's transaction holds the user's
    lock (``Database.writing``).
    """
    user, settings = new.user, deps.settings
    nearest = await deps.channels.nearest(
        conn, memories_of(user, include_archived=True), new.vector, NEAREST)
    duplicates = await _duplicates(conn, user, new, [
        i for i, score in nearest if score >= settings.dedup_threshold])
    folded = {row.id for row in duplicates}
    current = await current_facts(
        conn, user, [i for i in dict.fromkeys([*(i for i, _ in nearest), *new.supersedes])
                     if i not in folded])
    superseded, spared = closes(new, current)
    if duplicates:
        # A restatement is folded in, and still closes what it contradicts:
        # "Lives in Madrid" again after "Moved to Berlin" reopens Madrid, closes Berlin.
        merged = await _merge(conn, deps, duplicates, new)
        await _supersede(conn, user, superseded, current, by=merged.id, said_at=new.said_at)
        return merged
    if admit:
        admission = admission_of(new, nearest, superseded, spared, settings)
        if not admission.admitted:
            await _reject(conn, new, admission)
            return None
    memory_id = await _insert(conn, deps, new)
    await _supersede(conn, user, superseded, current, by=memory_id, said_at=new.said_at)
    await prune_excess(conn, deps, user)
    return rows.to_memory(await rows.fetch(conn, user, memory_id))


async def current_facts(
    conn: AsyncConnection, user: str, ids: Sequence[str]
) -> dict[str, Any]:
    """Of ``ids``, the memories that are live and still valid (may be superseded)."""
    if not ids:
        return {}
    found = await conn.execute(
        select(memories.c.id, memories.c.text, memories.c.source).where(
            memories.c.user_id == user, memories.c.id.in_(list(ids)),
            memories.c.state != "archived", memories.c.valid_to.is_(None)))
    return {row.id: row for row in found}


# -- pure decisions, shared with memory.bulk ------------------------------------


def pick_duplicates(close: Iterable[Any], text: str) -> list[Any]:
    """Of the stored rows close to a new fact (nearest first), those it restates.

    Only those ``decide`` says it reinforces, and that reinforce each other: a new
    fact that bridges several stored variants folds them all into one, so the outcome
    does not depend on the order the variants arrived in. A text stored already, word
    for word, reinforces that memory and changes nothing else: adding the same facts
    again leaves the store as it was. An archived fact is never rewritten nor
    absorbed: it comes back as it is when the new fact restates it and adds nothing
    to it, and no current fact does.
    """
    restated = [row for row in close if restates(row.text, text)]
    same = [row for row in restated if row.text == text]
    if same:
        return same[:1]
    chosen: list[Any] = []
    for row in restated:
        if row.state != "archived" and all(restates(c.text, row.text) for c in chosen):
            chosen.append(row)
    if chosen:
        return chosen
    return next(([row] for row in restated if adds_nothing(row.text, text)), [])


def restates(old: str, new: str) -> bool:
    return decide(old, new, similar=True).action == "reinforce"


def closes(new: Candidate, current: Mapping[str, Any]) -> tuple[dict[str, str], bool]:
    """The current facts ``new`` supersedes or closes, each with why, and whether one
    was spared.

    ``decide`` and the LLM's judgement add up; only ids in ``current`` (this user's
    live, valid facts) count, so a stale or foreign id from the LLM does nothing.
    """
    reasons = {i: decision.reason for i, row in current.items()
               if (decision := decide(row.text, new.text, similar=False)).action
               in ("supersede", "close")}
    for memory_id in new.supersedes:
        if memory_id in current:
            reasons.setdefault(memory_id, f"judged by the LLM: {new.text}")
    # an extracted fact never overrides what the user asked us to remember
    closed = {i: why for i, why in reasons.items()
              if not (new.source == "extracted" and current[i].source == "explicit")}
    return closed, len(closed) < len(reasons)


def admission_of(
    new: Candidate, nearest: Sequence[tuple[str, float]], superseded: Mapping[str, str],
    spared: bool, settings: Settings,
) -> Admission:
    """Admission control's verdict on a fact no stored one restates. Its novelty is
    measured against the facts it leaves current: "Is not allergic to peanuts" is
    news about "Is allergic to peanuts", however close their vectors."""
    return score_candidate(
        new.text, source=new.source,
        max_similarity_to_stored=max([0.0, *(score for i, score in nearest
                                             if i not in superseded)]),
        contradicts_stored=spared,
        supersedes_stored=bool(superseded),
        threshold=settings.admission_threshold)


def new_row(new: Candidate, memory_id: str, model_name: str, now: datetime) -> dict[str, Any]:
    """The ``memories`` row of a new fact."""
    return {
        "id": memory_id, "user_id": new.user, "text": new.text, "importance": new.importance,
        "kind": new.kind, "source": new.source, "state": "active", "reinforcements": 0,
        "embedding": new.vector, "embedding_model": model_name,
        "source_message_id": new.source_message_id, "created_at": now, "updated_at": now,
        "valid_from": new.said_at or now}


def added_event(new: Candidate, memory_id: str) -> dict[str, Any]:
    return {"memory_id": memory_id, "action": "added", "reason": new.source,
            "new_text": new.text, "new_importance": new.importance}


def fold(
    duplicates: Sequence[Any], new: Candidate, settings: Settings, now: datetime
) -> tuple[dict[str, Any], dict[str, Any]]:
    """How ``new`` folds into ``duplicates[0]``: the survivor's new values and its event.

    The rest of ``duplicates`` are absorbed into it (``absorb_events``).
    """
    old, absorbed = duplicates[0], duplicates[1:]
    # the most complete stored text (the most content words), the survivor's on a tie
    written = max(duplicates, key=lambda row: len(gist(row.text).words))
    replay = new.source_message_id is not None and new.source_message_id == old.source_message_id
    decision = merge(
        old_text=written.text, old_importance=max(row.importance for row in duplicates),
        new_text=new.text, new_importance=new.importance,
        replay=replay, reinforcement_cap=settings.reinforcement_cap,
    )
    values: dict[str, Any] = {
        "text": decision.text,
        "importance": decision.importance,
        "reinforcements": sum(row.reinforcements for row in duplicates) + len(absorbed)
        + int(decision.reinforced),
        "state": "active",  # a restated archived fact comes back
        "updated_at": now,
        # the message of the text kept; a fact without one (stored as it was asked for,
        # before its message was recorded) takes the message that restates it
        "source_message_id": (new.source_message_id if (
            decision.text == new.text and decision.text != written.text)
            or written.source_message_id is None else written.source_message_id),
    }
    if not replay:  # every variant pulls the stored vector towards itself
        values["embedding"] = centroid(
            [*(row.embedding for row in duplicates), new.vector],
            [*(row.reinforcements + 1.0 for row in duplicates), 1.0])
    reopened = old.valid_to is not None
    if reopened:  # restated after it was superseded or called wrong: true again, from then
        values.update(reopen_values(old, new.said_at or now), superseded_by=None)
    if new.source == "explicit" or any(row.source == "explicit" for row in duplicates):
        values["source"] = "explicit"
    closed_by = "superseded" if old.superseded_by is not None else "closed"
    return values, {
        "memory_id": old.id, "action": "merged",
        "reason": (f"restated after it was {closed_by}: current again" if reopened
                   else "reinforced by a restatement" if decision.reinforced else "replayed"),
        "old_text": old.text, "new_text": decision.text,
        "old_importance": old.importance, "new_importance": decision.importance,
    }


def reopen_values(row: Any, since: datetime) -> dict[str, Any]:
    """A closed fact current again, from ``since`` (when the user restated or corrected
    it), so a "wrong" or "irrelevant" verdict on it no longer counts (it would demote it
    at once)."""
    return {"valid_to": None, "invalidated_at": None, "valid_from": since, "state": "active",
            "feedback": max(row.feedback, 0)}


def absorb_events(absorbed: Sequence[Any], into: str) -> list[dict[str, Any]]:
    return [{"memory_id": row.id, "action": "merged",
             "reason": f"folded into {into} (same fact)",
             "old_text": row.text, "new_text": row.text,
             "old_importance": row.importance, "new_importance": row.importance}
            for row in absorbed]


def close_values(now: datetime, until: Any = None) -> dict[str, Any]:
    """A fact no longer true (superseded, or called wrong by the user): out of every
    context, still seen by time travel to an earlier instant; ``reopen_values`` undoes
    it. It was true ``until`` (when the fact that ended it was said; default ``now``),
    and stopped being believed ``now``."""
    return {"valid_to": now if until is None else until, "invalidated_at": now,
            "state": "archived", "updated_at": now}


def supersede_values(now: datetime, by: str, until: Any = None) -> dict[str, Any]:
    return {**close_values(now, until), "superseded_by": by}


def supersede_events(
    superseded: Mapping[str, str], current: Mapping[str, Any], by: str
) -> list[dict[str, Any]]:
    return [{"memory_id": i, "action": "superseded", "reason": f"{why} (by {by})",
             "old_text": current[i].text, "new_text": current[i].text}
            for i, why in superseded.items()]


def rejection_row(new: Candidate, admission: Admission, now: datetime) -> dict[str, Any]:
    log.info("admission rejected %r: %s", new.text, admission.explain())
    return {"user_id": new.user, "text": new.text, "source": new.source,
            "score": admission.score, "threshold": admission.threshold,
            "factors": dataclasses.asdict(admission.factors),
            "source_message_id": new.source_message_id, "created_at": now}


# -- the SQL of one fact -----------------------------------------------------------


async def _insert(conn: AsyncConnection, deps: MemoryDeps, new: Candidate) -> str:
    memory_id = str(uuid.uuid4())
    await conn.execute(memories.insert().values(
        **new_row(new, memory_id, deps.model_name, utcnow())))
    await rows.log(conn, new.user, [added_event(new, memory_id)])
    return memory_id


async def _supersede(
    conn: AsyncConnection, user: str, superseded: Mapping[str, str],
    current: Mapping[str, Any], *, by: str, said_at: datetime | None,
) -> None:
    """Close the validity of ``superseded`` (id -> why) in favour of memory ``by``."""
    if not superseded:
        return
    # true until the new fact was said, never before it began (a history told out of order)
    until = None if said_at is None else case(
        (memories.c.valid_from > said_at, memories.c.valid_from), else_=said_at)
    await conn.execute(
        memories.update()
        .where(memories.c.user_id == user, memories.c.id.in_(list(superseded)))
        .values(**supersede_values(utcnow(), by, until)))
    await rows.log(conn, user, supersede_events(superseded, current, by))


async def _reject(conn: AsyncConnection, new: Candidate, admission: Admission) -> None:
    await conn.execute(admission_rejections.insert().values(
        **rejection_row(new, admission, utcnow())))


async def _duplicates(
    conn: AsyncConnection, user: str, new: Candidate, close: Sequence[str]
) -> list[Any]:
    """The stored facts ``new`` is a restatement of, nearest first, with their vectors."""
    if not close:
        return []
    found = {row.id: row for row in await conn.execute(
        select(*rows.MEMORY_COLUMNS, memories.c.embedding).where(
            memories.c.user_id == user, memories.c.id.in_(list(close))))}
    return pick_duplicates((found[i] for i in close if i in found), new.text)


async def _merge(
    conn: AsyncConnection, deps: MemoryDeps, duplicates: Sequence[Any], new: Candidate
) -> Memory:
    """Fold ``new`` (and any further stored variants) into the nearest duplicate."""
    old, absorbed = duplicates[0], list(duplicates[1:])
    values, event = fold(duplicates, new, deps.settings, utcnow())
    await conn.execute(memories.update().where(memories.c.id == old.id).values(**values))
    await rows.log(conn, new.user, [event])
    await _absorb(conn, new.user, absorbed, into=old.id)
    return rows.to_memory(await rows.fetch(conn, new.user, old.id))


async def _absorb(conn: AsyncConnection, user: str, absorbed: Sequence[Any], *, into: str) -> None:
    """Remove stored variants folded into memory ``into``; their history stays."""
    if not absorbed:
        return
    ids = [row.id for row in absorbed]
    await conn.execute(
        memories.update().where(memories.c.user_id == user, memories.c.superseded_by.in_(ids))
        .values(superseded_by=into))
    await conn.execute(
        memories.delete().where(memories.c.user_id == user, memories.c.id.in_(ids)))
    await items.repoint(conn, user, dict.fromkeys(ids, into))  # a store item keeps its index
    await graph_erasure.repoint_memories(conn, user, dict.fromkeys(ids, into))
    await rows.log(conn, user, absorb_events(absorbed, into))
