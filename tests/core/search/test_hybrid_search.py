"""Hybrid search (vector + keyword + trigram, fused with RRF) on both backends.

The pure parts (fusion, query terms, trigram similarity) are tested first,
without a store; then every channel, the fusion, the filters and the
isolation run against real SQLite and PostgreSQL stores.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from migration_steps import current, head, migrate
from sqlalchemy import column, table
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import InvalidInputError, ScoredMemory, Settings, TrueMem, default_embedder
from truemem_core.embeddings import normalize
from truemem_core.search.adjacent import adjacent
from truemem_core.search.channels import memories_of
from truemem_core.search.filters import CHANNELS, CheckedFilters, make_filters
from truemem_core.search.fusion import Fused, bound_adjacent, fuse, tied_ranks
from truemem_core.search.query_text import fragments, significant_terms, word_similarity
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import EmbeddingType, UTCDateTime

# -- pure functions ----------------------------------------------------------------------


def rrf(
    channels: dict[str, list[str]], *, k: int, weights: dict[str, float] | None = None
) -> list[tuple[str, float]]:
    """``fuse`` over plain ranked id lists (distinct scores, so no ties within a list)."""
    rankings = {name: [(i, -float(n)) for n, i in enumerate(dict.fromkeys(ids))]
                for name, ids in channels.items()}
    return [(hit.id, hit.score) for hit in fuse(rankings, k=k, weights=weights or {},
                                                 limit=1_000_000)]


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = dict(rrf({"a": ["x", "y", "z"], "b": ["y", "x"]}, k=60))
    assert fused["x"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["z"] == pytest.approx(1 / 63)


def test_rrf_order_weights_and_k() -> None:
    channels = {"vector": ["a", "b", "c", "d"], "keyword": ["d", "b"]}
    # b is second in both lists: agreement beats d's first and fourth places
    assert [i for i, _ in rrf(channels, k=60)] == ["b", "d", "a", "c"]
    # a heavy keyword channel puts its own first place on top
    assert rrf(channels, k=60, weights={"keyword": 3.0})[0][0] == "d"
    # a silenced one leaves the other's order
    assert [i for i, _ in rrf(channels, k=60, weights={"keyword": 0.0})] == ["a", "b", "c", "d"]
    # a small k rewards first places more: now d (1st + 4th) beats b (2nd + 2nd)
    assert rrf(channels, k=0)[0][0] == "d"
    # equal scores: the best single rank wins, then the id
    assert [i for i, _ in rrf({"a": ["p", "q"], "b": ["q", "p"]}, k=60)] == ["p", "q"]


def test_rrf_edge_cases() -> None:
    assert rrf({}, k=60) == []
    assert rrf({"a": []}, k=60) == []
    assert rrf({"a": ["x", "x", "y"]}, k=60) == rrf({"a": ["x", "y"]}, k=60)  # repeats once
    assert rrf({"a": ["x"], "b": ["x"]}, k=60, weights={"a": 0.0})[0][1] == pytest.approx(1 / 61)
    with pytest.raises(InvalidInputError):
        rrf({"a": ["x"]}, k=-1)


def test_tied_scores_share_a_rank() -> None:
    assert tied_ranks([("a", 2.0), ("b", 1.0), ("c", 1.0), ("d", 0.5)]) == {
        "a": 1, "b": 2, "c": 2, "d": 4}


def test_fuse_explains_every_hit() -> None:
    hits = fuse(
        {"vector": [("a", 0.9), ("b", 0.8)], "keyword": [("b", 3.0)], "trigram": []},
        k=60, weights={"vector": 1.0, "keyword": 2.0, "trigram": 1.0}, limit=5,
    )
    assert [h.id for h in hits] == ["b", "a"]
    assert hits[0].ranks == {"vector": 2, "keyword": 1}
    assert hits[0].scores == {"vector": 0.8, "keyword": 3.0}
    assert hits[0].score == pytest.approx(1 / 62 + 2 / 61)
    assert fuse({"vector": [("a", 1.0), ("b", 0.5)]}, k=60, weights={}, limit=1)[0].id == "a"


def test_idf_prefers_rare_terms() -> None:
    # term 0 is in every memory, term 1 only in "b"
    ranked = idf_rank([("a", 0, 1.0), ("b", 0, 1.0), ("b", 1, 1.0), ("c", 0, 1.0)],
                      documents=3, limit=10)
    assert ranked[0][0] == "b"
    short_first = bm25_rank([("long", 0, 200), ("short", 0, 20)], documents=10,
                            average_length=50, limit=10)
    assert [i for i, _ in short_first] == ["short", "long"]


def test_significant_terms() -> None:
    assert significant_terms("the SSL thing") == ["ssl"]
    assert significant_terms("¿Qué me dijo sobre los cacahuetes?") == ["dijo", "cacahuetes"]
    assert significant_terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline", "go", "lgbtq", "support", "group"]
    assert significant_terms("who is he?") == ["who", "is", "he"]  # all stop-words: keep all
    assert significant_terms("?!") == []


def test_trigram_helpers_match_pg_trgm() -> None:
    assert "joh" in fragments("jonh")  # bridges a transposition
    assert "isb" in fragments("lisbn") and "bot" in fragments("cetrbot")
    assert "alé" in fragments("Alérgica")
    # values from PostgreSQL's pg_trgm (word_similarity('word', 'two words') is 0.8)
    assert word_similarity("word", "two words") == pytest.approx(0.8)
    assert word_similarity("jonh", "Her brother John is a pilot") == pytest.approx(0.4)
    assert word_similarity("lisbn", "Lives in Lisbon") == pytest.approx(4 / 6)
    assert word_similarity("ssl", "Renewed the SSL certificate") == 1.0
    assert word_similarity("xyz", "Renewed the SSL certificate") == 0.0


# -- on a store ----------------------------------------------------------------------------

T0 = datetime(2024, 3, 1, tzinfo=UTC)
NOTES: list[tuple[str, str, int]] = [
    ("Renewed the SSL certificate with Certbot on the web server", "episodic", 3),
    ("Her brother John is a pilot", "semantic", 4),
    ("Lives in Lisbon", "semantic", 4),
    ("Es alérgica a los cacahuetes", "semantic", 5),
    ("Has a golden retriever named Max", "semantic", 3),
    ("Fixed the nginx timeout on the staging server", "episodic", 2),
    ("Prefers answers as bullet points", "semantic", 5),
    ("Went climbing in Sintra last weekend", "episodic", 2),
    ("Uses PostgreSQL 16 in production", "semantic", 4),
    ("Is learning Japanese", "semantic", 2),
    ("Drinks coffee without sugar", "semantic", 1),
    ("Plays the piano badly", "semantic", 1),
]


def seed(memory: TrueMem, user: str = "ana", *, archived: tuple[str, ...] = ()) -> None:
    """The notes above, one day apart from T0 (via import: batch-embedded, exact dates)."""
    items = []
    for day, (note, kind, importance) in enumerate(NOTES):
        when = (T0 + timedelta(days=day)).isoformat()
        items.append({"text": note, "kind": kind, "importance": importance,
                      "state": "archived" if note in archived else "active",
                      "created_at": when, "updated_at": when})
    memory.import_user(user, {"format": "truemem.user/1", "memories": items})


def texts(hits: list[ScoredMemory]) -> list[str]:
    return [h.memory.text for h in hits]


@pytest.mark.parametrize(
    ("mode", "query", "expected"),
    [
        ("keyword", "SSL certificate", NOTES[0][0]),
        ("keyword", "cacahuetes", NOTES[3][0]),  # Spanish stems
        ("keyword", "cacahuete", NOTES[3][0]),
        ("keyword", "nginx servers", NOTES[5][0]),  # stemmed: server(s)
        ("trigram", "Lisbn", NOTES[2][0]),
        ("trigram", "Jonh", NOTES[1][0]),
        ("trigram", "certbot renewal", NOTES[0][0]),
        ("trigram", "cetrbot", NOTES[0][0]),  # a transposition in a longer word
        ("trigram", "postgres", NOTES[8][0]),
        ("vector", "What is my dog called?", NOTES[4][0]),
        ("vector", "Which city do I live in?", NOTES[2][0]),
    ],
)
def test_each_channel_alone(memory: TrueMem, mode: Any, query: str, expected: str) -> None:
    seed(memory)
    hits = memory.search("ana", query, k=3, mode=mode)
    assert hits[0].memory.text == expected
    assert all(set(h.ranks) == set(h.channels) == {mode} for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_lexical_channels_return_only_matches(memory: TrueMem) -> None:
    seed(memory)
    assert memory.search("ana", "Jonh", mode="keyword") == []  # a typo: no word matches
    assert memory.search("ana", "quantum chromodynamics", mode="trigram") == []
    assert memory.search("ana", "?!", mode="keyword") == []  # no word at all
    assert len(memory.search("ana", "server", mode="keyword", k=10)) == 2


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the SSL thing", NOTES[0][0]),  # the seed's example: "lo del SSL"
        ("lo del SSL", NOTES[0][0]),
        ("Jonh", NOTES[1][0]),
        ("Lisbn", NOTES[2][0]),
        ("cacahuetes", NOTES[3][0]),
        ("certbot", NOTES[0][0]),
        ("What is my dog called?", NOTES[4][0]),
    ],
)
def test_hybrid_finds_fuzzy_queries(memory: TrueMem, query: str, expected: str) -> None:
    seed(memory)
    assert memory.search("ana", query, k=1)[0].memory.text == expected


def test_hybrid_hits_explain_themselves(store_url: str) -> None:
    settings = Settings(rrf_k=10, weight_keyword=2.0)
    with TrueMem(store_url, settings=settings) as memory:
        seed(memory)
        hits = memory.search("ana", "the SSL thing", k=5)
        top = hits[0]
        assert top.memory.text == NOTES[0][0]
        assert set(top.ranks) == set(top.channels) == set(CHANNELS)
        assert top.ranks == {"vector": 1, "keyword": 1, "trigram": 1}
        for hit in hits:
            expected = sum(settings.channel_weights[c] / (10 + r) for c, r in hit.ranks.items())
            assert hit.score == pytest.approx(expected)
        assert top.explain().startswith(f"{top.score:.4g} = vector #1")
        assert top.to_dict()["ranks"] == top.ranks


def test_zero_weights_leave_plain_vector_order(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(weight_keyword=0, weight_trigram=0)) as memory:
        seed(memory)
        hybrid = memory.search("ana", "the SSL thing", k=5)
        vector = memory.search("ana", "the SSL thing", k=5, mode="vector")
        assert texts(hybrid) == texts(vector)
        assert all(set(h.ranks) == {"vector"} for h in hybrid)


def test_the_adjacent_channel_brings_in_what_was_recorded_alongside(store_url: str) -> None:
    # one conversation: the wedding is only "the ceremony" in the turn after the venue
    episode = [
        "Talked about the weather in Porto",
        "We found a lovely greenhouse venue for the wedding party",
        "The ceremony last week was emotional, we both cried",
        "Started a new job at the bakery",
    ]
    with TrueMem(store_url) as memory:
        seed(memory)  # a day apart from each other: adjacent to none
        for note in episode:
            memory.add_memory("ana", note)
        hits = memory.search("ana", "greenhouse", k=4)
        assert hits[0].memory.text == episode[1]
        adjacent = {h.memory.text: h for h in hits if "adjacent" in h.ranks}
        assert set(adjacent) <= set(episode) and episode[2] in adjacent
        # brought in by the top hit: right below it, never above
        assert hits[1].memory.text in (episode[0], episode[2])
        assert "adjacent" in hits[1].ranks and hits[1].score < hits[0].score
    with TrueMem(store_url, settings=Settings(weight_adjacent=0)) as memory:
        assert all("adjacent" not in h.ranks for h in memory.search("ana", "greenhouse", k=4))
    with TrueMem(store_url, settings=Settings(adjacent_window_s=0)) as memory:
        assert all("adjacent" not in h.ranks for h in memory.search("ana", "greenhouse", k=4))


def _adjacent_by_definition(
    timeline: list[tuple[datetime, str]], seeds: list[Fused], when: dict[str, datetime],
    window: timedelta, span: int,
) -> list[tuple[str, float]]:
    """Each seed's ``span`` closest memories on either side within ``window``, best seed
    score per adjacent row: the adjacent channel's contract, spelled out plainly."""
    best: dict[str, float] = {}
    for seed in seeds:
        at = (when[seed.id], seed.id)
        before = sorted(m for m in timeline if m < at and m[0] >= at[0] - window)[-span:]
        after = sorted(m for m in timeline if m > at and m[0] <= at[0] + window)[:span]
        for _, memory_id in before + after:
            best[memory_id] = max(best.get(memory_id, 0.0), seed.score)
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))


@pytest.mark.parametrize("trial", range(3))
def test_the_adjacent_channel_matches_its_definition(store_url: str, trial: int) -> None:
    rng = random.Random(trial)
    start, at = datetime(2024, 3, 1, tzinfo=UTC), []
    for _ in range(40):  # steps of 0 (ties), minutes, and an hour or more
        start += timedelta(minutes=rng.choice([0, 0, 3, 10, 25, 70, 200]))
        at.append(start)
    notes = [{"text": f"note {i}", "importance": 3, "created_at": t.isoformat(),
              "updated_at": t.isoformat()} for i, t in enumerate(at)]
    settings = Settings(adjacent_span=rng.choice([1, 2, 3]), adjacent_window_s=1800)
    with TrueMem(store_url, settings=settings) as memory:
        memory.import_user("ana", {"format": "truemem.user/1", "memories": notes})
        memory.import_user("bob", {"format": "truemem.user/1", "memories": notes})
        stored = memory.list_memories("ana")
    when = {m.id: m.created_at for m in stored}
    seeds = [Fused(m.id, rng.random(), {"vector": 1}) for m in rng.sample(stored, 4)]
    middle = at[20]
    for filters in (CheckedFilters(), CheckedFilters(created_after=middle)):
        timeline = sorted((t, i) for i, t in when.items()
                          if filters.created_after is None or t >= filters.created_after)
        expected = _adjacent_by_definition(
            timeline, seeds, when, timedelta(seconds=1800), settings.adjacent_span)

        async def channel(filters: CheckedFilters = filters) -> list[tuple[str, float]]:
            db = Database(resolve_url(store_url), embedder=None)
            try:
                async with db.transaction(readonly=True) as conn:
                    found = await adjacent(conn, memories_of("ana", filters), seeds, settings)
                    return found.ranking
            finally:
                await db.close()

        assert asyncio.run(channel()) == expected


def test_bound_adjacent_never_lifts_above_the_seed() -> None:
    fused = [Fused("seed", 0.04, {"vector": 1}),
             Fused("near", 0.05, {"vector": 2, "adjacent": 1}),
             Fused("other", 0.03, {"vector": 3})]
    bounded = bound_adjacent(fused, direct={"seed": 0.04, "near": 0.02, "other": 0.03},
                               seeds={"near": 0.04})
    assert [h.id for h in bounded] == ["seed", "near", "other"]
    assert 0.03 < bounded[1].score < 0.04
    # a memory whose own score was already higher keeps it
    kept = bound_adjacent([Fused("x", 0.06, {"vector": 1, "adjacent": 2})],
                         direct={"x": 0.05}, seeds={"x": 0.04})
    assert kept[0].score == 0.05


def test_small_users_get_everything_in_hybrid(memory: TrueMem) -> None:
    for note, _, _ in NOTES[:4]:
        memory.add_memory("ana", note)
    hits = memory.search("ana", "quantum chromodynamics")
    assert sorted(texts(hits)) == sorted(n for n, _, _ in NOTES[:4])
    assert len(memory.search("ana", "the SSL thing", k=len(NOTES))) == 4


def test_filters(memory: TrueMem) -> None:
    seed(memory, archived=(NOTES[1][0],))
    everything = len(NOTES)
    for mode in ("hybrid", "vector", "keyword", "trigram"):
        hits = memory.search("ana", "server", k=50, mode=mode, kind="episodic")
        assert hits and all(h.memory.kind == "episodic" for h in hits)
    hits = memory.search("ana", "anything", k=50, min_importance=4)
    assert sorted(texts(hits)) == sorted(n for n, _, i in NOTES if i >= 4 and n != NOTES[1][0])
    # archived: out of standard search, findable on request
    assert NOTES[1][0] not in texts(memory.search("ana", "John", k=50))
    assert len(memory.search("ana", "John", k=50, include_archived=True)) == everything
    assert texts(memory.search("ana", "John", k=50, state="archived")) == [NOTES[1][0]]
    assert len(memory.search("ana", "John", k=50, state=["active", "archived"])) == everything
    # time range: created_after inclusive, created_before exclusive
    window = memory.search("ana", "anything", k=50, created_after=T0 + timedelta(days=2),
                           created_before=T0 + timedelta(days=5))
    assert sorted(texts(window)) == sorted(n for n, _, _ in NOTES[2:5])
    late = memory.search("ana", "SSL", k=50, mode="keyword", created_after=T0 + timedelta(days=1))
    assert late == []
    both = memory.search("ana", "server", k=50, mode="trigram", kind="semantic",
                         min_importance=5)
    assert both == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "fuzzy"}, "mode"),
        ({"kind": "procedural"}, "kind"),
        ({"kind": []}, "kind"),
        ({"kind": 3}, "kind"),
        ({"state": "deleted"}, "state"),
        ({"min_importance": 0}, "importance"),
        ({"min_importance": 6}, "importance"),
        ({"min_importance": "4"}, "importance"),
        ({"min_importance": True}, "importance"),
        ({"created_after": "2024-01-01"}, "created_after"),
        ({"created_before": datetime(2024, 1, 1)}, "timezone"),
        ({"created_after": T0, "created_before": T0}, "earlier"),
        ({"include_archived": "yes"}, "include_archived"),
        ({"k": 0}, "k"),
        ({"k": 2.5}, "k"),
    ],
)
def test_bad_filters_are_rejected(memory: TrueMem, options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        memory.search("ana", "anything", **options)


def test_make_filters_defaults() -> None:
    assert make_filters().states == ("active", "ephemeral")
    assert make_filters(include_archived=True).states == ("active", "ephemeral", "archived")
    assert make_filters(kind="semantic").kinds == ("semantic",)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword", "trigram"])
def test_isolation_in_every_channel(memory: TrueMem, mode: Any) -> None:
    seed(memory, "ana")
    memory.add_memory("bob", "Owns a cat called Whiskers")
    for query in [note for note, _, _ in NOTES] + ["SSL", "Jonh", "Lisbn", "cacahuetes"]:
        hits = memory.search("bob", query, k=50, mode=mode, include_archived=True)
        assert all(h.memory.user_id == "bob" for h in hits), (mode, query)
    assert memory.search("carla", "SSL certificate", mode=mode) == []
    # bob's memories do not change how ana's rank
    alone = memory.search("ana", "server certificate", k=5, mode=mode)
    memory.add_memory("bob", "Renewed the server certificate of the server farm")
    assert [(h.memory.id, h.score) for h in memory.search(
        "ana", "server certificate", k=5, mode=mode)] == [(h.memory.id, h.score) for h in alone]


def test_indexes_follow_updates_and_deletes(memory: TrueMem) -> None:
    seed(memory)
    cert = memory.search("ana", "certbot", k=1, mode="keyword")[0].memory
    memory.update_memory("ana", cert.id, text="Moved the blog to Hugo and Netlify")
    assert memory.search("ana", "certbot", mode="keyword") == []
    assert memory.search("ana", "certbot", mode="trigram") == []
    assert texts(memory.search("ana", "netlify", mode="keyword")) == [
        "Moved the blog to Hugo and Netlify"]
    memory.update_memory("ana", cert.id, importance=5)  # text unchanged: still indexed once
    assert len(memory.search("ana", "Hugo", mode="keyword")) == 1
    memory.delete_memory("ana", cert.id)
    assert memory.search("ana", "Hugo blog", mode="keyword") == []
    assert memory.search("ana", "netlfy", mode="trigram") == []
    memory.erase_user("ana")
    assert memory.search("ana", "Lisbon", mode="trigram") == []


async def test_async_search_with_filters(memory: TrueMem) -> None:
    seed(memory)
    hits = await memory.asearch("ana", "the SSL thing", k=2, kind="episodic",
                                created_before=T0 + timedelta(days=30))
    assert hits[0].memory.text == NOTES[0][0]
    assert all(h.memory.kind == "episodic" for h in hits)


# -- migration ---------------------------------------------------------------------------


# The memories table as revision 0001 created it (later revisions add columns).
MEMORIES_0001 = table(
    "memories", *(column(name) for name in (
        "id", "user_id", "text", "importance", "kind", "source", "state", "reinforcements",
        "embedding_model", "source_message_id")),
    column("embedding", EmbeddingType()), column("created_at", UTCDateTime()),
    column("updated_at", UTCDateTime()),
)


async def _insert_at_0001(url: str, user: str, note: str) -> None:
    """Write a memory the way a 0001 store held it (no search indexes, no triggers)."""
    vector = normalize(default_embedder().embed([note]))[0]
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.begin() as conn:
            await conn.execute(MEMORIES_0001.insert().values(
                id=str(uuid.uuid4()), user_id=user, text=note, importance=3, kind="semantic",
                source="manual", state="active", reinforcements=0, embedding=vector,
                embedding_model=default_embedder().model_name, source_message_id=None,
                created_at=T0, updated_at=T0))
    finally:
        await engine.dispose()


async def test_migration_upgrades_a_0001_store(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0001")
    await _insert_at_0001(tmp_url, "ana", NOTES[0][0])
    await _insert_at_0001(tmp_url, "ana", NOTES[2][0])
    assert await current(tmp_url) == "0001"
    async with TrueMem(tmp_url) as memory:  # opening upgrades to head, 0002 indexes old rows
        assert texts(await memory.asearch("ana", "certbot", mode="keyword")) == [NOTES[0][0]]
        assert texts(await memory.asearch("ana", "Lisbn", mode="trigram")) == [NOTES[2][0]]
    assert await current(tmp_url) == head()
    await migrate(tmp_url, "upgrade", "head")  # idempotent: nothing left to do
    # a clean downgrade, then the upgrade again (the backfill runs twice, indexes once)
    await migrate(tmp_url, "downgrade", "0001")
    await _insert_at_0001(tmp_url, "ana", NOTES[1][0])
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("ana", NOTES[3][0])  # indexed by the triggers
        assert texts(await memory.asearch("ana", "Jonh", mode="trigram")) == [NOTES[1][0]]
        assert texts(await memory.asearch("ana", "Lisbon", mode="keyword")) == [NOTES[2][0]]
        assert texts(await memory.asearch("ana", "cacahuetes", mode="keyword")) == [NOTES[3][0]]
    assert await current(tmp_url) == head()


def test_a_search_filter_that_does_not_exist_is_a_type_error(memory: TrueMem) -> None:
    """``**filters`` forwards only ``SearchFilters``: an unknown name (or ``vector``, a
    keyword of the service's own) is refused as Python refuses an unknown keyword."""
    memory.add_memory("ana", "Lives in Lisbon")
    for name in ("colour", "vector"):
        with pytest.raises(TypeError, match=name):
            memory.search("ana", "Lisbon", **{name: None})
