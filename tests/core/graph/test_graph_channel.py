"""The search's graph channel on both backends: the entities a query names bring the
memories their facts came from into the fusion, within the search's filters and the
user's own graph, and nothing when it is switched off or the user has no graph."""

from __future__ import annotations

import json
from types import SimpleNamespace

from scripted_llm import ScriptedLLM

from truemem_core import Settings, TrueMem
from truemem_core.graph.channel import rank

_FACTS = [
    {"text": "Project Atlas runs on db-01", "importance": 3,
     "graph": {"entities": [{"name": "Atlas", "type": "project"},
                            {"name": "db-01", "type": "server"}],
               "relations": [{"from": "Atlas", "type": "uses", "to": "db-01"}]}},
    {"text": "db-01 has 64 GB of RAM", "importance": 2,
     "graph": {"observations": [{"entity": "db-01", "text": "Has 64 GB of RAM"}]}},
    {"text": "Likes hiking in the Alps", "importance": 3, "graph": {}},
    {"text": "Drinks green tea every morning", "importance": 2, "graph": {}},
]


_ON = Settings(weight_graph=1.0)


def _filled(store_url: str, settings: Settings = _ON) -> TrueMem:
    memory = TrueMem(store_url, llm=ScriptedLLM(json.dumps({"facts": _FACTS})),
                     settings=settings)
    memory.record("ana", "s", "Atlas runs on db-01, which has 64 GB. I hike and drink tea.",
                  "Noted.")
    memory.drain()
    return memory


def _graph_ranks(memory: TrueMem, user: str, query: str) -> dict[str, int]:
    return {hit.memory.text: hit.ranks["graph"] for hit in memory.search(user, query)
            if "graph" in hit.ranks}


def test_entities_named_in_the_query_bring_their_memories(store_url: str) -> None:
    with _filled(store_url) as memory:
        assert _graph_ranks(memory, "ana", "Which machine hosts Atlas?") == {
            "Project Atlas runs on db-01": 1}
        assert _graph_ranks(memory, "ana", "how much RAM does db-01 have") == {
            "Project Atlas runs on db-01": 1, "db-01 has 64 GB of RAM": 1}
        assert _graph_ranks(memory, "ana", "what tea do I drink?") == {}
        assert _graph_ranks(memory, "bob", "Which machine hosts Atlas?") == {}
        # the search's filters hold for this channel too
        assert _graph_ranks(memory, "ana", "Which machine hosts Atlas?") and not [
            hit for hit in memory.search("ana", "Which machine hosts Atlas?", min_importance=4)
            if "graph" in hit.ranks]


def test_the_channel_is_off_by_default(store_url: str) -> None:
    assert Settings().weight_graph == 0
    with _filled(store_url, Settings()) as memory:
        hits = memory.search("ana", "Which machine hosts Atlas?")
        assert hits and all("graph" not in hit.ranks for hit in hits)


def test_rank_sums_each_fact_by_its_entity_position() -> None:
    rows = [SimpleNamespace(a="atlas", b="db", memory_id="m1", confidence=1.0),
            SimpleNamespace(a="db", b="db", memory_id="m2", confidence=1.0),
            SimpleNamespace(a="db", b="db", memory_id="m1", confidence=0.5),
            SimpleNamespace(a="x", b="y", memory_id="m3", confidence=1.0)]
    assert rank(["atlas", "db"], rows) == [("m1", 1.0 + 0.5 + 0.25), ("m2", 0.5)]
