"""Causal chains and paths: one recursive CTE statement each, on both backends.

A walk carries the entities it has visited as ``,id,id,`` (``seen``): an edge
back to a visited entity is returned once (``stop``) but not followed, which
ends cycles; ``depth`` bounds the walk. ``causes`` follows causal relations
backwards (towards what led to the entity), ``effects`` forwards; each relation
is returned once, at the smallest depth it was reached. ``path`` follows any
relation either way and returns the shortest chain (``rels``: its relation ids): the
first walk that reaches the target, breadth first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    CTE,
    Integer,
    Text,
    case,
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


def _ids(*parts: Any) -> Any:
    """``,a,b,`` of ids (text on both backends)."""
    text: Any = literal(",")
    for part in parts:
        text = text + part + ","
    return cast(text, Text)


def _seen(walk: Any, node: Any) -> Any:
    return walk.c.seen.contains(cast(literal(",") + node + ",", Text))


def _chain(user: str, start: str, direction: Direction, depth: int,
           as_of: datetime | None, valid_at: datetime | None) -> CTE:
    near, far = ((edge.c.target_id, edge.c.source_id) if direction == "causes"
                 else (edge.c.source_id, edge.c.target_id))
    where = (edge.c.user_id == user, edge.c.type.in_(CAUSAL_TYPES), known(edge, as_of, valid_at))
    base = select(
        edge.c.id.label("rid"), far.label("node"), literal_column("1", Integer).label("depth"),
        _ids(near, far).label("seen"),
        cast(case((near == far, 1), else_=0), Integer).label("stop"),
    ).where(near == start, *where)
    walk = base.cte("walk", recursive=True)
    step = select(
        edge.c.id, far, walk.c.depth + 1, cast(walk.c.seen + far + ",", Text),
        cast(case((_seen(walk, far), 1), else_=0), Integer),
    ).select_from(edge.join(walk, near == walk.c.node)).where(
        *where, walk.c.depth < depth, walk.c.stop == 0)
    return walk.union_all(step)


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


async def path(
    conn: AsyncConnection, user: str, a: str, b: str, *, max_depth: int,
    as_of: datetime | None, valid_at: datetime | None,
) -> list[Relation]:
    edges = _edges(user, as_of, valid_at)
    base = select(edges.c.y.label("node"), literal_column("1", Integer).label("depth"),
                  _ids(edges.c.x, edges.c.y).label("seen"), _ids(edges.c.rid).label("rels"),
                  ).where(edges.c.x == a)
    walk = base.cte("walk", recursive=True)
    step = select(
        edges.c.y, walk.c.depth + 1, cast(walk.c.seen + edges.c.y + ",", Text),
        cast(walk.c.rels + edges.c.rid + ",", Text),
    ).select_from(edges.join(walk, edges.c.x == walk.c.node)).where(
        walk.c.depth < max_depth, walk.c.node != b, ~_seen(walk, edges.c.y))
    walk = walk.union_all(step)
    # No ORDER BY: both databases produce a recursive CTE's rows level by level (PostgreSQL
    # one working table per iteration, SQLite a FIFO queue), so the first walk to reach b is
    # a shortest one, and the LIMIT stops the walk there instead of enumerating every path.
    best = select(walk.c.rels).where(walk.c.node == b).limit(1).subquery("best")
    rel = graph_relations
    rows = list(await conn.execute(
        relations(user).add_columns(best.c.rels.label("chain"))
        .join(best, best.c.rels.contains(cast(literal(",") + rel.c.id + ",", Text)))))
    if not rows:
        return []
    order = rows[0].chain.strip(",").split(",")
    return sorted((relation_of(row) for row in rows), key=lambda x: order.index(x.id))
