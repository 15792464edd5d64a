"""Propagated importance: how much a memory is held up by the graph around it.

Memories and entities form one undirected graph: a memory is linked to each
entity its observations are about and to both ends of each relation it is
evidence of; a relation also links its two entities. The user's own node,
which every fact without a subject points to, is left out (it would link
everything to everything).

A personalised PageRank runs on it: the restart vector is each memory's own
strength (``memory.lifecycle.strength``: importance, retrievals,
reinforcements, feedback), so importance flows from important, often-retrieved
memories through the entities they share to the memories around them. A
memory's *support* is the rank it receives from the graph (its total rank less
its own restart share), relative to what an average memory holds on its own,
capped at 1: an isolated memory has 0, one next to a hub of important memories
1. The maintenance job lengthens the memory's half-life by
``1 + PROPAGATION_GAIN × support``, so it decays slower (twice as slow at most).

Computed by the background maintenance job only, never on the request path:
two reads and a few NumPy power iterations per user.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.rules_mentions import USER
from truemem_core.storage.schema import graph_entities, graph_observations, graph_relations

DAMPING = 0.85
HOPS = 2
PROPAGATION_GAIN = 1.0

Link = tuple[str, str]
"""An undirected edge between two node ids (a memory's and an entity's, or two entities')."""


def support(strengths: Mapping[str, float], links: Iterable[Link]) -> dict[str, float]:
    """Each memory of ``strengths`` -> its support in [0, 1] (pure; see the module doc).

    Every other node ``links`` names is an entity; an edge from a node to itself is
    ignored, a repeated one counted once.
    """
    edges = [link for link in dict.fromkeys(tuple(sorted(link)) for link in links)
             if link[0] != link[1]]
    memories = list(strengths)
    owned: dict[str, list[str]] = {m: [] for m in memories}  # memory -> its entities
    between: list[tuple[str, str]] = []  # entity -- entity
    for a, b in edges:
        if a in owned and b in owned:
            continue  # two memories are linked through entities only
        if a in owned or b in owned:
            memory, entity = (a, b) if a in owned else (b, a)
            owned[memory].append(entity)
        else:
            between.append((a, b))
    entities = sorted({e for found in owned.values() for e in found} | {e for p in between
                                                                           for e in p})
    if not entities:
        return dict.fromkeys(memories, 0.0)
    index = {e: n for n, e in enumerate(entities)}
    share = {m: max(0.0, strengths[m]) / len(found) for m, found in owned.items() if found}
    seed = np.zeros(len(entities))
    for memory, found in owned.items():
        for entity in found:
            seed[index[entity]] += share[memory]
    rank, echo = _spread(seed, [(index[a], index[b]) for a, b in between])
    scale = 2 * float(np.mean([max(0.0, v) for v in strengths.values()]) or 1.0)
    found_support = {
        m: sum(float(rank[index[e]] - share[m] * echo[index[e]]) for e in found) / scale
        for m, found in owned.items() if found}
    return {m: min(1.0, max(0.0, found_support.get(m, 0.0))) for m in memories}


def _spread(seed: np.ndarray, edges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """What reaches each entity within ``HOPS`` hops among entities (damped by DAMPING at
    each hop, split evenly among a node's neighbours), and per entity how much of its
    own seed comes back to it (itself, and the two-hop return), for removing echoes."""
    echo = np.ones(len(seed))
    if not edges:
        return seed, echo
    ends = np.array(edges)
    src, dst = np.concatenate([ends[:, 0], ends[:, 1]]), np.concatenate([ends[:, 1], ends[:, 0]])
    degree = np.bincount(src, minlength=len(seed)).astype(float)
    rank, hop = seed.copy(), seed.copy()
    for _ in range(HOPS):
        flow = np.zeros(len(seed))
        np.add.at(flow, dst, hop[src] / degree[src])
        hop = DAMPING * flow
        rank += hop
    back = np.zeros(len(seed))  # sum over neighbours e' of 1 / (deg(e) deg(e'))
    np.add.at(back, src, 1.0 / (degree[src] * degree[dst]))
    return rank, echo + DAMPING**2 * back


async def links(conn: AsyncConnection, user: str, memory_ids: Collection[str]) -> list[Link]:
    """The user's current graph as (memory, entity) and (entity, entity) links, memories
    limited to ``memory_ids``, the user's own node left out: three small reads.

    Node ids are the memories' own and the entities' prefixed with "e:".
    """
    e, o, r = graph_entities, graph_observations, graph_relations
    hub = {row.id for row in await conn.execute(
        select(e.c.id).where(e.c.user_id == user, e.c.norm == USER))}
    seen = await conn.execute(select(o.c.source_memory_id, o.c.entity_id).where(
        o.c.user_id == user, o.c.invalidated_at.is_(None), o.c.valid_to.is_(None),
        o.c.source_memory_id.is_not(None)))
    found: list[Link] = [(row.source_memory_id, f"e:{row.entity_id}") for row in seen
                         if row.entity_id not in hub and row.source_memory_id in memory_ids]
    related: Any = await conn.execute(select(
        r.c.source_id, r.c.target_id, r.c.evidence_memory_ids).where(
        r.c.user_id == user, r.c.invalidated_at.is_(None), r.c.valid_to.is_(None)))
    for row in related:
        ends = [f"e:{end}" for end in (row.source_id, row.target_id) if end not in hub]
        if len(ends) == 2:
            found.append((ends[0], ends[1]))
        found += [(memory, end) for memory in row.evidence_memory_ids or ()
                  if memory in memory_ids for end in ends]
    return found
