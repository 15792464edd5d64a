"""Dedup on both backends: one row per fact whatever the order its variants come in,
and never one row for facts whose numbers or names differ."""

from __future__ import annotations

import itertools

from truemem_core import Settings, TrueMem

PEANUTS = ["Is allergic to peanuts", "Is allergic to peanuts!", "Is allergic to peanuts.....",
           "Is allergic to peanuts and tree nuts"]


def test_near_duplicates_end_as_one_memory_in_every_order(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        for n, order in enumerate(itertools.permutations(PEANUTS)):
            for text in order:
                memory.add_memory(f"user{n}", text)
            stored = memory.list_memories(f"user{n}", include_archived=True)
            assert [m.text for m in stored] == ["Is allergic to peanuts and tree nuts"], order
            assert stored[0].reinforcements == 3


def test_facts_whose_numbers_or_names_differ_are_never_merged(store_url: str) -> None:
    facts = [f"Owns {n} cats in city {2 * n + 25}" for n in range(5, 45)]
    facts += ["Has a dog named Rex", "Has a dog named Max", "Has two kids", "Has three kids"]
    with TrueMem(store_url, settings=Settings(memory_limit=500)) as memory:
        for fact in facts:
            memory.add_memory("ana", fact)
        assert sorted(m.text for m in memory.list_memories("ana")) == sorted(facts)


def test_a_bridging_fact_folds_its_variants_and_keeps_their_history(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        tree = memory.add_memory("ana", "Is allergic to peanuts and tree nuts")
        shout = memory.add_memory("ana", "Is allergic to peanuts!")
        assert shout.id != tree.id  # cosine 0.848: apart, until a fact close to both
        bridge = memory.add_memory("ana", "Is allergic to peanuts")
        stored = memory.list_memories("ana")
        assert [m.id for m in stored] == [bridge.id]
        assert stored[0].text == "Is allergic to peanuts and tree nuts"
        folded = {tree.id, shout.id} - {bridge.id}
        for memory_id in folded:
            reason = memory.history("ana", memory_id)[-1].reason
            assert reason == f"folded into {bridge.id} (same fact)"
