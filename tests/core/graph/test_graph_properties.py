"""Property tests over random histories, on both backends.

Bi-temporal: after any sequence of adds, replacements and retractions, (1) no two
current rows of one fact overlap in world time, (2) ``as_of`` each past instant
returns exactly what a read returned at that instant, and (3) what is valid at each
date is what a pure-Python model of the history says.
Isolation: users with the same names never see each other's entities, relations or
paths; ``path`` finds a chain exactly when a breadth-first search of the user's own
edges does, and of the same length.
"""

from __future__ import annotations

import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any

from db_access import rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from truemem_core import RelationSpec, TrueMem
from truemem_core.storage.schema import graph_relations

DATES = [datetime(2026, month, 1, tzinfo=UTC) for month in range(1, 7)]
PROBES = [datetime(2026, month, 15, tzinfo=UTC) for month in range(1, 7)]
SOURCES, TARGETS = ["a"], ["x", "y"]

Key = tuple[str, str]
op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(SOURCES), st.sampled_from(TARGETS),
              st.sampled_from(range(len(DATES)))),
    st.tuples(st.just("replace"), st.sampled_from(SOURCES), st.sampled_from(TARGETS),
              st.sampled_from(range(len(DATES))), st.sampled_from(TARGETS)),
    st.tuples(st.just("delete"), st.sampled_from(SOURCES), st.sampled_from(TARGETS)),
)
PROPERTY = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


class Model:
    """The world-time intervals of each current (source, target) fact."""

    def __init__(self) -> None:
        self.facts: dict[Key, list[list[datetime | None]]] = {}

    def add(self, key: Key, start: datetime) -> None:
        spans = self.facts.setdefault(key, [])
        if any(end is None for _, end in spans):
            return
        ends = [end for _, end in spans if end is not None]
        spans.append([max([start, *ends]), None])

    def close(self, key: Key, end: datetime) -> None:
        for span in self.facts.get(key, []):
            if span[1] is None:
                span[1] = max(end, span[0])  # type: ignore[type-var]

    def valid_at(self, at: datetime) -> set[Key]:
        return {key for key, spans in self.facts.items()
                for start, end in spans if start <= at and (end is None or at < end)}  # type: ignore[operator]


def _apply(memory: TrueMem, user: str, model: Model, step: tuple[Any, ...]) -> None:
    if step[0] == "add":
        _, source, target, date = step
        memory.graph.add_relations(
            user, [RelationSpec(source, "uses", target, valid_from=DATES[date])])
        model.add((source, target), DATES[date])
    elif step[0] == "replace":
        _, source, target, date, old = step
        memory.graph.add_relations(user, [RelationSpec(
            source, "uses", target, valid_from=DATES[date], replaces=old)])
        if old != target:
            model.close((source, old), DATES[date])
        model.add((source, target), DATES[date])
    else:
        _, source, target = step
        memory.graph.delete_relations(
            user, [{"from": source, "relationType": "uses", "to": target}])
        model.facts.pop((source, target), None)


def _view(memory: TrueMem, user: str, **when: datetime) -> list[tuple[Any, ...]]:
    return [(r.id, r.source, r.target, r.valid_from, r.valid_to)
            for r in memory.graph.list_relations(user, **when)]


@PROPERTY
@given(history=st.lists(op, min_size=1, max_size=8))
def test_bi_temporal_invariants(memory: TrueMem, history: list[tuple[Any, ...]]) -> None:
    user, model = f"u-{uuid.uuid4()}", Model()
    seen: list[tuple[datetime, dict[datetime, list[tuple[Any, ...]]]]] = []
    for step in history:
        _apply(memory, user, model, step)
        seen.append((datetime.now(UTC), {at: _view(memory, user, valid_at=at) for at in PROBES}))
        for at in PROBES:
            assert {(s, t) for _, s, t, _, _ in seen[-1][1][at]} == model.valid_at(at)
    current = rows(memory, select(graph_relations).where(
        graph_relations.c.user_id == user, graph_relations.c.invalidated_at.is_(None)))
    for row in current:  # no two current rows of one fact overlap
        for other in current:
            if row.id != other.id and (row.source_id, row.target_id) == (
                    other.source_id, other.target_id):
                assert (row.valid_to is not None and row.valid_to <= other.valid_from) or (
                    other.valid_to is not None and other.valid_to <= row.valid_from)
    for instant, views in seen:  # as_of returns what was read then
        for at in PROBES:
            assert _view(memory, user, as_of=instant, valid_at=at) == views[at]


NAMES = ["ana", "atlas", "db", "pg", "bob", "eve"]
edges = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=8)


def _shortest(pairs: list[tuple[str, str]], a: str, b: str) -> int | None:
    """Hops of the shortest undirected chain from a to b (None: none within 6)."""
    graph: dict[str, set[str]] = {}
    for x, y in pairs:
        graph.setdefault(x, set()).add(y)
        graph.setdefault(y, set()).add(x)
    queue, depth = deque([a]), {a: 0}
    while queue:
        node = queue.popleft()
        for nxt in graph.get(node, ()):
            if nxt not in depth:
                depth[nxt] = depth[node] + 1
                queue.append(nxt)
    found = depth.get(b)
    return found if found is not None and found <= 6 else None


@settings(PROPERTY, max_examples=12)
@given(mine=edges, theirs=edges)
def test_nothing_crosses_users(memory: TrueMem, mine: list[tuple[str, str]],
                               theirs: list[tuple[str, str]]) -> None:
    ana, bob = f"ana-{uuid.uuid4()}", f"bob-{uuid.uuid4()}"
    for user, pairs in ((ana, mine), (bob, theirs)):
        if pairs:
            memory.graph.add_relations(user, [RelationSpec(x, "caused", y) for x, y in pairs])
    own = {x.id for x in memory.graph.list_entities(ana)}
    assert {x.name for x in memory.graph.list_entities(ana)} == {n for pair in mine for n in pair}
    assert {(r.source, r.target) for r in memory.graph.list_relations(ana)} == set(mine)
    for relation in memory.graph.get(ana).relations:
        assert {relation.source_id, relation.target_id} <= own
    names = sorted({n for pair in mine for n in pair})
    for a in names:
        for hop in memory.graph.causes(ana, a, depth=6) + memory.graph.effects(ana, a, depth=6):
            assert {hop.relation.source_id, hop.relation.target_id} <= own
        for b in names:
            if a != b:
                chain = memory.graph.path(ana, a, b)
                assert (len(chain) or None) == _shortest(mine, a, b)
                assert all({r.source_id, r.target_id} <= own for r in chain)
