"""Causal chains and paths: one statement each, with recursive CTEs, on both backends.

No walk enumerates paths. ``causes`` / ``effects`` grow a table of (relation, depth)
pairs with a UNION, so each relation enters at most once per depth (at most relations
x depth rows, whatever the cycles) and is returned at the smallest depth it is reached:
backwards from the entity along causal relations for ``causes``, forwards for
``effects``; a cycle is walked round only until the depth bound. ``path`` follows any
relation either way: a breadth-first distance table from the start (a UNION, so each
entity once per depth), then one walk back from the target along shortest paths only;
the first to reach the start is the answer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy import (
    CTE,
    Integer,
    Text,
    and_,
    cast,
    func,
    literal,
    literal_column,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.graph.records import CAUSAL_TYPES, Hop, Relation
from truemem_core.graph.tables import known, relation_of, relation_order, relations
from truemem_core.storage.schema import graph_relations

Direction = Literal["causes", "effects"]
edge = graph_relations.alias("edge")


def _chain(user: str, start: str, direction: Direction, depth: int,
           as_of: datetime | None, valid_at: datetime | None) -> CTE:
    near, far = ((edge.c.target_id, edge.c.source_id) if direction == "causes"
                 else (edge.c.source_id, edge.c.target_id))
    where = (edge.c.user_id == user, edge.c.type.in_(CAUSAL_TYPES), known(edge, as_of, valid_at))
    base = select(edge.c.id.label("rid"), far.label("node"),
                  literal_column("1", Integer).label("depth")).where(near == start, *where)
    walk = base.cte("walk", recursive=True)
    return walk.union(select(edge.c.id, far, walk.c.depth + 1).select_from(
        edge.join(walk, near == walk.c.node)).where(*where, walk.c.depth < depth))


async def chain(
    conn: AsyncConnection, user: str, start: str, *, direction: Direction, depth: int,
    as_of: datetime | None, valid_at: datetime | None,
) -> list[Hop]:
    walk = _chain(user, start, direction, depth, as_of, valid_at)
    hops = (select(walk.c.rid, func.min(walk.c.depth).label("depth"))
            .group_by(walk.c.rid).subquery("hops"))
    rows = await conn.execute(relations(user).add_columns(hops.c.depth.label("hop_depth"))
                              .join(hops, hops.c.rid == graph_relations.c.id)
                              .order_by(hops.c.depth, *relation_order()))
    return [Hop(relation_of(row), int(row.hop_depth)) for row in rows]


def _edges(user: str, as_of: datetime | None, valid_at: datetime | None) -> CTE:
    where = (edge.c.user_id == user, known(edge, as_of, valid_at))
    forward = select(edge.c.id.label("rid"), edge.c.source_id.label("x"),
                     edge.c.target_id.label("y")).where(*where)
    backward = select(edge.c.id, edge.c.target_id, edge.c.source_id).where(*where)
    return union_all(forward, backward).cte("edges")


def _distances(edges: CTE, a: str, b: str, max_depth: int) -> CTE:
    """(node, depth) for every node a walk of ``depth`` hops from ``a`` reaches: a UNION,
    so each pair once, at most (entities x max_depth) rows whatever the paths."""
    base = select(cast(literal(a), Text).label("node"),
                  literal_column("0", Integer).label("depth"))
    dist = base.cte("dist", recursive=True)
    return dist.union(select(cast(edges.c.y, Text), dist.c.depth + 1).select_from(
        edges.join(dist, edges.c.x == dist.c.node)).where(
        dist.c.depth < max_depth, dist.c.node != b))


def _back(edges: CTE, dist: CTE, b: str) -> CTE:
    """Walks back from ``b`` to ``a`` along shortest paths only: each step goes to a
    neighbour that ``a`` reaches in one hop less (``rels``: the relation ids, from b)."""
    nearest = select(func.min(dist.c.depth)).where(dist.c.node == b).scalar_subquery()
    base = select(cast(literal(b), Text).label("node"), nearest.label("depth"),
                  cast(literal(","), Text).label("rels")).where(nearest.is_not(None))
    back = base.cte("back", recursive=True)
    before = dist.alias("before")
    return back.union_all(select(
        cast(edges.c.x, Text), back.c.depth - 1, cast(back.c.rels + edges.c.rid + ",", Text),
    ).select_from(edges.join(back, edges.c.y == back.c.node).join(
        before, and_(before.c.node == edges.c.x, before.c.depth == back.c.depth - 1))
    ).where(back.c.depth > 0))


async def path(
    conn: AsyncConnection, user: str, a: str, b: str, *, max_depth: int,
    as_of: datetime | None, valid_at: datetime | None,
) -> list[Relation]:
    edges = _edges(user, as_of, valid_at)
    back = _back(edges, _distances(edges, a, b, max_depth), b)
    best = select(back.c.rels).where(back.c.depth == 0).limit(1).subquery("best")
    rel = graph_relations
    rows = list(await conn.execute(
        relations(user).add_columns(best.c.rels.label("chain"))
        .join(best, best.c.rels.contains(cast(literal(",") + rel.c.id + ",", Text)))))
    if not rows:
        return []
    order = rows[0].chain.strip(",").split(",")[::-1]  # walked from b: reverse to start at a
    return sorted((relation_of(row) for row in rows), key=lambda x: order.index(x.id))
