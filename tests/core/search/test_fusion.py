"""Fusion of the search channels and the per-user lexical scores, as properties.

tests/core/search/test_hybrid_search.py checks worked examples; these check what must hold
for any input: limits, order, determinism, ties.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from truemem_core.errors import InvalidInputError
from truemem_core.search.fusion import Fused, bound_adjacent, fuse, single, tied_ranks
from truemem_core.search.scoring import bm25_rank, idf_rank

CHANNELS = ("vector", "keyword", "trigram", "adjacent")
ids = st.sampled_from([f"m{n}" for n in range(12)])
# few distinct scores, so ties are common
scores = st.sampled_from([0.1, 0.25, 0.5, 0.75, 1.0, 2.0])


Rankings = dict[str, list[tuple[str, float]]]


@st.composite
def rankings(draw: st.DrawFn, *, channels: tuple[str, ...] = CHANNELS) -> Rankings:
    """Channel -> (id, score) best first, each id at most once per channel."""
    out = {}
    for name in draw(st.lists(st.sampled_from(channels), unique=True, max_size=len(channels))):
        members = draw(st.lists(ids, unique=True, max_size=8))
        values = sorted(draw(st.lists(scores, min_size=len(members), max_size=len(members))),
                        reverse=True)
        out[name] = list(zip(members, values, strict=True))
    return out


weights = st.fixed_dictionaries({name: st.sampled_from([0.0, 0.5, 1.0, 2.0]) for name in CHANNELS})
ks = st.integers(min_value=0, max_value=100)
limits = st.integers(min_value=0, max_value=15)

# ----------------------------------------------------------------------------- tied_ranks


@given(hits=rankings(channels=("vector",)))
def test_tied_ranks_are_competition_ranks(hits: Rankings) -> None:
    ranked = hits.get("vector", [])
    ranks = tied_ranks(ranked)
    assert set(ranks) == {i for i, _ in ranked}
    for position, (memory_id, score) in enumerate(ranked, start=1):
        first = next(p for p, (_, s) in enumerate(ranked, start=1) if s == score)
        assert ranks[memory_id] == first <= position  # "1, 2, 2, 4"


def test_tied_ranks_keep_an_ids_first_rank() -> None:
    assert tied_ranks([("a", 3.0), ("b", 2.0), ("a", 1.0)]) == {"a": 1, "b": 2}
    assert tied_ranks([]) == {}


# ----------------------------------------------------------------------------- fuse


def _expected_score(rankings: Rankings, memory_id: str, k: int,
                    weights: dict[str, float]) -> float:
    total = 0.0
    for name, hits in rankings.items():
        ranks = tied_ranks(hits)
        if memory_id in ranks:
            total += weights.get(name, 1.0) / (k + ranks[memory_id])
    return total


@given(ranked=rankings(), k=ks, weights=weights, limit=limits)
def test_fuse_properties(ranked: Rankings, k: int,
                         weights: dict[str, float], limit: int) -> None:
    fused = fuse(ranked, k=k, weights=weights, limit=limit)
    found = {i for hits in ranked.values() for i, _ in hits}
    assert len(fused) == min(limit, len(found))
    assert len({h.id for h in fused}) == len(fused)
    for hit in fused:
        assert hit.score == pytest.approx(_expected_score(ranked, hit.id, k, weights))
        # the explanation: exactly the channels that returned it, with their rank and score
        assert set(hit.ranks) == {n for n, hits in ranked.items() if hit.id in dict(hits)}
        for name, rank in hit.ranks.items():
            assert rank == tied_ranks(ranked[name])[hit.id]
            assert hit.scores[name] == dict(ranked[name])[hit.id]
    # best first; equal scores by the best single rank, then the id
    keys = [(-h.score, min(h.ranks.values()), h.id) for h in fused]
    assert keys == sorted(keys)
    # the best ``limit`` of them: nothing left out scores higher than the last kept
    if fused:
        left_out = found - {h.id for h in fused}
        assert all(_expected_score(ranked, i, k, weights) <= fused[-1].score + 1e-12
                   for i in left_out)


@given(ranked=rankings(), k=ks, weights=weights, limit=limits,
       seed=st.randoms(use_true_random=False))
def test_fuse_ignores_the_order_of_tied_hits(
    ranked: Rankings, k: int, weights: dict[str, float], limit: int,
    seed: random.Random,
) -> None:
    fused = fuse(ranked, k=k, weights=weights, limit=limit)
    reordered = {}
    for name in ranked:
        # within a channel, hits of equal score may come in any order
        groups: dict[float, list[tuple[str, float]]] = {}
        for hit in ranked[name]:
            groups.setdefault(hit[1], []).append(hit)
        hits = []
        for score in sorted(groups, reverse=True):
            group = groups[score]
            seed.shuffle(group)
            hits += group
        reordered[name] = hits
    again = fuse(reordered, k=k, weights=weights, limit=limit)
    assert [(h.id, h.ranks, h.scores) for h in again] == [(h.id, h.ranks, h.scores) for h in fused]
    assert [h.score for h in again] == [h.score for h in fused]


def test_fuse_rejects_a_negative_k_and_a_zero_weight_adds_nothing() -> None:
    with pytest.raises(InvalidInputError, match="k"):
        fuse({"vector": [("a", 1.0)]}, k=-1, weights={}, limit=5)
    fused = fuse({"vector": [("a", 1.0)], "keyword": [("a", 3.0), ("b", 1.0)]},
                 k=60, weights={"keyword": 0.0}, limit=5)
    assert [(h.id, h.score) for h in fused] == [("a", pytest.approx(1 / 61)), ("b", 0.0)]
    assert fused[1].ranks == {"keyword": 2}  # still explained, though it adds nothing


# ----------------------------------------------------------------------------- single


@given(ranked=rankings(channels=("keyword",)), limit=limits)
def test_single_keeps_the_channels_order_score_and_tied_ranks(
    ranked: Rankings, limit: int
) -> None:
    hits = ranked.get("keyword", [])
    out = single("keyword", hits, limit=limit)
    assert [(h.id, h.score) for h in out] == hits[:limit]
    ranks = tied_ranks(hits)
    assert all(h.ranks == {"keyword": ranks[h.id]} and h.scores == {"keyword": h.score}
               for h in out)


# ----------------------------------------------------------------------------- bound_adjacent


@st.composite
def adjacent_cases(draw: st.DrawFn) -> tuple[list[Fused], dict[str, float], dict[str, float]]:
    members = draw(st.lists(ids, unique=True, min_size=1, max_size=8))
    fused = []
    for memory_id in members:
        channels = draw(st.lists(st.sampled_from(CHANNELS), unique=True, min_size=1))
        ranks = {name: draw(st.integers(min_value=1, max_value=10)) for name in channels}
        fused.append(Fused(memory_id, draw(scores) / 10, ranks))
    # a memory's score before the adjacent channel is part of its fused score
    direct = {h.id: h.score * draw(st.sampled_from([0.0, 0.5, 1.0])) for h in fused}
    seeds = {h.id: draw(scores) / 10 for h in fused if draw(st.booleans())}
    return fused, direct, seeds


@given(case=adjacent_cases())
def test_adjacent_rows_never_climb_above_their_seed(
    case: tuple[list[Fused], dict[str, float], dict[str, float]],
) -> None:
    fused, direct, seeds = case
    bounded = bound_adjacent(fused, direct=direct, seeds=seeds)
    assert sorted(h.id for h in bounded) == sorted(h.id for h in fused)
    before = {h.id: h for h in fused}
    for hit in bounded:
        original = before[hit.id]
        assert hit.ranks == original.ranks
        ceiling = seeds.get(hit.id)
        if "adjacent" not in hit.ranks or ceiling is None or original.score < ceiling:
            assert hit.score == original.score  # untouched
        else:
            assert hit.score <= original.score
            assert hit.score < ceiling or hit.score == direct.get(hit.id, 0.0)
            assert hit.score >= min(original.score, direct.get(hit.id, 0.0))
    keys = [(-h.score, min(h.ranks.values()), h.id) for h in bounded]
    assert keys == sorted(keys)
    assert bound_adjacent(list(reversed(fused)), direct=direct, seeds=seeds) == bounded


# ----------------------------------------------------------------------------- scoring

matches = st.lists(st.tuples(ids, st.integers(min_value=0, max_value=3),
                             st.floats(min_value=0.05, max_value=1.0)),
                   max_size=25, unique_by=lambda m: (m[0], m[1]))


@given(found=matches, extra=st.integers(min_value=0, max_value=50), limit=limits,
       seed=st.randoms(use_true_random=False))
def test_idf_rank_properties(found: list[tuple[str, int, float]], extra: int, limit: int,
                             seed: random.Random) -> None:
    documents = len({m for m, _, _ in found}) + extra
    ranked = idf_rank(found, documents=documents, limit=limit)
    assert len(ranked) == min(limit, len({m for m, _, _ in found}))
    assert all(score > 0 for _, score in ranked)
    keys = [(-score, memory_id) for memory_id, score in ranked]
    assert keys == sorted(keys)  # best first, ties by id
    shuffled = list(found)
    seed.shuffle(shuffled)
    again = idf_rank(shuffled, documents=documents, limit=limit)
    assert [i for i, _ in again] == [i for i, _ in ranked]
    assert [s for _, s in again] == pytest.approx([s for _, s in ranked])


def test_a_rare_term_weighs_more_than_a_common_one() -> None:
    # term 0 in three memories, term 1 in one: the memory with the rare term wins
    ranked = idf_rank([("a", 0, 1.0), ("b", 0, 1.0), ("c", 0, 1.0), ("c", 1, 1.0), ("d", 1, 1.0)],
                      documents=10, limit=10)
    assert [i for i, _ in ranked] == ["c", "d", "a", "b"]
    idf = {df: math.log(1 + (10 - df + 0.5) / (df + 0.5)) for df in (2, 3)}
    assert dict(ranked)["d"] == pytest.approx(idf[2])
    assert dict(ranked)["c"] == pytest.approx(idf[2] + idf[3])
    # strength scales a match linearly
    half = dict(idf_rank([("a", 0, 0.5), ("b", 0, 1.0)], documents=10, limit=10))
    assert half["a"] == pytest.approx(half["b"] / 2)


@given(lengths=st.lists(st.integers(min_value=1, max_value=400), min_size=2, max_size=8),
       average=st.one_of(st.none(), st.floats(min_value=0.0, max_value=300.0)))
def test_bm25_prefers_the_shorter_of_equal_matches(lengths: list[int],
                                                   average: float | None) -> None:
    found = [(f"m{n:02d}", 0, length) for n, length in enumerate(lengths)]
    ranked = bm25_rank(found, documents=20, average_length=average, limit=len(found))
    by_id = dict(ranked)
    for (a, _, la), (b, _, lb) in itertools.combinations(found, 2):
        if la < lb:
            assert by_id[a] > by_id[b]
        elif la == lb:
            assert by_id[a] == by_id[b]
    assert bm25_rank(found, documents=20, average_length=average, limit=1) == ranked[:1]


def test_bm25_with_b_zero_ignores_length() -> None:
    ranked = bm25_rank([("long", 0, 300), ("short", 0, 10)], documents=5, average_length=50,
                       limit=5, b=0.0)
    assert ranked[0][1] == ranked[1][1] and [i for i, _ in ranked] == ["long", "short"]
