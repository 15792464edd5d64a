"""Keeping a user's memories in shape: retrieval counts, dynamic scores and states
(with the importance propagated through the graph, ``graph.propagation``), pruning past
the soft limit.

Each function runs in the caller's transaction; updates go out in batches
(one executemany), never a statement per row.

``maintain`` reads every current memory of the user and the graph around them, so
``record`` queues it when due, at most once a ``maintain_interval_s`` per user
(``conversation.recording``), not after every exchange. Even so it rewrites only the
rows whose state changes or whose stored score is ``SCORE_STEP`` or more off: a score
decays over days, and rewriting every memory of the user on every run (each row with
its vector and text-search column, in the write-ahead log and left for vacuum) would
cost the database far more than the scores are worth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.propagation import PROPAGATION_GAIN, links, support
from truemem_core.memory import rows
from truemem_core.memory.deps import MemoryDeps
from truemem_core.memory.lifecycle import (
    BASE_HALF_LIFE_DAYS,
    dynamic_score,
    is_protected,
    next_state,
    strength,
)
from truemem_core.memory.pruning import PruneCandidate, select_for_pruning
from truemem_core.storage.schema import memories, utcnow

_BY_ID = memories.c.id == bindparam("row_id")
SCORE_STEP = 0.005  # a stored dynamic score is rewritten once it is this far off (of 1)


async def touch(conn: AsyncConnection, counts: Mapping[str, Mapping[str, int]]) -> None:
    """Count ``counts[user][id]`` retrievals of each memory, any number of users in one
    executemany, and bring ephemeral or archived ones back. The caller holds the users'
    locks; superseded memories and those of an erased user are left as they are."""
    served = [{"owner": user, "row_id": memory_id, "served": n}
              for user in sorted(counts) for memory_id, n in sorted(counts[user].items())]
    if served:
        await conn.execute(
            memories.update()
            .where(memories.c.user_id == bindparam("owner"), _BY_ID,
                   memories.c.valid_to.is_(None))
            .values(retrievals=memories.c.retrievals + bindparam("served"),
                    last_accessed_at=utcnow(), state="active"), served)


async def maintain(conn: AsyncConnection, deps: MemoryDeps, user: str) -> dict[str, str]:
    """Recompute dynamic scores, move states to match, then prune; returns state changes.

    States and pruning are decided together, then written once: a memory pruned past
    the soft limit, whose score alone would make it active, stays archived and is not
    rewritten (raised, then pruned again, it gained two history events every exchange).
    The caller's transaction holds the user's lock (``Database.writing``).
    """
    now = utcnow()
    found = (await conn.execute(_SCORED, {"owner": user})).all()
    current = [row for row in found if row.valid_to is None]
    held = await _propagated(conn, user, current)
    settings = deps.settings
    scores: dict[str, float] = {}
    planned = {row.id: row.state for row in found}
    for row in current:
        scores[row.id] = score = dynamic_score(
            importance=row.importance, retrievals=row.retrievals,
            last_access=row.last_accessed_at, created_at=row.created_at,
            reinforcements=row.reinforcements, feedback=row.feedback, now=now,
            base_half_life_days=BASE_HALF_LIFE_DAYS * (1 + PROPAGATION_GAIN * held[row.id]))
        planned[row.id] = next_state(row.state, score, protected=is_protected(
            row.importance, row.source, protected_importance=settings.protected_importance))
    live = [row for row in found if planned[row.id] != "archived"]
    pruned = set(select_for_pruning(
        [PruneCandidate(r.id, r.importance, r.source, r.created_at) for r in live],
        excess=len(live) - settings.memory_limit,
        protected_importance=settings.protected_importance))
    changed: dict[str, str] = {}
    updates: list[dict[str, Any]] = []
    for row in found:
        state = "archived" if row.id in pruned else planned[row.id]
        score = scores.get(row.id, row.dynamic_score)  # a closed fact's is left as it is
        if state != row.state:
            changed[row.id] = state
        elif score is None or (row.dynamic_score is not None
                               and abs(score - row.dynamic_score) < SCORE_STEP):
            continue  # nothing worth a row rewrite
        updates.append({"row_id": row.id, "new_score": score, "new_state": state})
    if updates:
        await conn.execute(memories.update().where(_BY_ID).values(
            dynamic_score=bindparam("new_score"), state=bindparam("new_state")), updates)
    victims = [i for i in changed if i in pruned]
    if victims:
        await conn.execute(memories.update().where(
            memories.c.user_id == user, memories.c.id.in_(victims)).values(updated_at=now))
        told = await conn.execute(select(memories.c.id, memories.c.text, memories.c.importance)
                                  .where(memories.c.user_id == user,
                                         memories.c.id.in_(victims)))
        await rows.log(conn, user, prune_events(list(told), settings.memory_limit))
    await rows.log(conn, user, [
        {"memory_id": i, "action": "lifecycle", "reason": f"now {state}"}
        for i, state in changed.items() if i not in pruned])
    return changed


# what ``maintain`` reads: a closed, archived fact keeps its state and score, so it is
# not read at all
_SCORED = select(
    memories.c.id, memories.c.importance, memories.c.source, memories.c.state,
    memories.c.retrievals, memories.c.last_accessed_at, memories.c.created_at,
    memories.c.reinforcements, memories.c.feedback, memories.c.dynamic_score,
    memories.c.valid_to,
).where(memories.c.user_id == bindparam("owner"),
        or_(memories.c.valid_to.is_(None), memories.c.state != "archived"))


async def _propagated(conn: AsyncConnection, user: str, current: Sequence[Any]) -> dict[str, float]:
    """Each memory's support from the graph around it (``graph.propagation``): a memory
    linked through entities to important, often-retrieved ones decays slower."""
    strengths = {row.id: strength(importance=row.importance, retrievals=row.retrievals,
                                  reinforcements=row.reinforcements, feedback=row.feedback)
                 for row in current}
    return support(strengths, await links(conn, user, strengths.keys()))


async def prune_excess(conn: AsyncConnection, deps: MemoryDeps, user: str) -> list[str]:
    """Archive the user's excess memories past the soft limit; returns their ids.

    The caller holds the user's lock.
    """
    settings = deps.settings
    # two ranges of ix_memories_user_state_importance, never the archived history
    live = (memories.c.user_id == user) & memories.c.state.in_(["active", "ephemeral"])
    count = (await conn.execute(select(func.count()).where(live))).scalar_one()
    excess = count - settings.memory_limit
    if excess <= 0:
        return []
    found = await conn.execute(
        select(memories.c.id, memories.c.importance, memories.c.source, memories.c.created_at,
               memories.c.text).where(live))
    by_id = {row.id: row for row in found}
    victims = select_for_pruning(
        [PruneCandidate(r.id, r.importance, r.source, r.created_at) for r in by_id.values()],
        excess=excess, protected_importance=settings.protected_importance)
    if not victims:
        return []
    await conn.execute(
        memories.update()
        .where(memories.c.user_id == user, memories.c.id.in_(victims))
        .values(state="archived", updated_at=utcnow()))
    await rows.log(conn, user, prune_events([by_id[i] for i in victims], settings.memory_limit))
    return victims


def prune_events(victims: Sequence[Any], limit: int) -> list[dict[str, Any]]:
    """The history events of memories pruned past the soft limit (shared with ``bulk``)."""
    return [{
        "memory_id": row.id, "action": "pruned", "reason": f"over the soft limit of {limit}",
        "old_text": row.text, "new_text": row.text,
        "old_importance": row.importance, "new_importance": row.importance,
    } for row in victims]
