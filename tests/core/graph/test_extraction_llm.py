"""The graph part of the LLM's extraction answer, through the real prompt and parsers
with a scripted model: in the same call as the facts, kept with each fact as JSON and
read strictly by the graph layer (``parse_graph_json``), never costing a fact."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from truemem_core.graph.extraction_parse import MalformedGraph, parse_graph_json
from truemem_core.graph.records import EntitySpec, RelationSpec
from truemem_core.language import EXTRACTION_PROMPT, extract_with_llm

_ATLAS = {
    "entities": [{"name": "Atlas", "type": "project"},
                 {"name": "PostgreSQL 16", "entityType": "tool"}],
    "relations": [{"from": "Atlas", "type": "uses", "to": "PostgreSQL 16",
                   "replaces": "PostgreSQL 14", "confidence": 0.9}],
    "observations": [{"entity": "Atlas", "text": "Moved its database in March"}],
}


def _answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


async def test_one_call_asks_for_facts_and_their_graph_by_names() -> None:
    llm = ScriptedLLM(_answer({"text": "Project Atlas uses PostgreSQL 16", "graph": _ATLAS}))
    [fact] = await extract_with_llm(llm, "Atlas is on Postgres 16 now", "Noted.")
    assert len(llm.prompts) == 1 and llm.prompts[0][0]["content"] == EXTRACTION_PROMPT
    assert '"graph"' in EXTRACTION_PROMPT and '"user"' in EXTRACTION_PROMPT
    assert fact.text == "Project Atlas uses PostgreSQL 16" and fact.graph is not None
    graph = parse_graph_json(fact.graph)
    assert graph.entities == (EntitySpec("Atlas", "project"), EntitySpec("PostgreSQL 16", "tool"))
    assert graph.relations == (RelationSpec(
        "Atlas", "uses", "PostgreSQL 16", source_type="project", target_type="tool",
        confidence=0.9, replaces="PostgreSQL 14"),)
    assert [(o.entity, o.text, o.entity_type) for o in graph.observations] == [
        ("Atlas", "Moved its database in March", "project")]


async def test_a_causal_relation_keeps_its_evidence_and_type() -> None:
    graph = {"relations": [{"from": "full disk", "relationType": "Led To", "to": "outage",
                            "evidence": "the disk filled up and the site went down"}]}
    [fact] = await extract_with_llm(
        ScriptedLLM(_answer({"text": "A full disk led to an outage", "kind": "episodic",
                             "graph": graph})), "the disk filled up and the site went down", "")
    assert fact.graph is not None
    [relation] = parse_graph_json(fact.graph).relations
    assert (relation.type, relation.evidence) == (
        "led_to", "the disk filled up and the site went down")


@pytest.mark.parametrize("graph", [
    {"relations": "Atlas uses PostgreSQL"},
    {"relations": [{"from": "Atlas", "type": "uses"}]},
    {"relations": [{"from": "Atlas", "type": "uses", "to": "PostgreSQL", "why": "x"}]},
    {"relations": [{"from": "Atlas", "type": "uses!", "to": "PostgreSQL"}]},
    {"relations": [{"from": "Atlas", "type": "uses", "to": "PostgreSQL", "confidence": 7}]},
    {"entities": [{"name": "", "type": "project"}]},
    {"entities": [{"name": "Atlas", "type": "project"}], "edges": []},
    ["Atlas"],
])
async def test_a_malformed_graph_part_is_refused_and_its_fact_kept(graph: Any) -> None:
    reply = _answer({"text": "Project Atlas uses PostgreSQL", "importance": 2, "graph": graph},
                    {"text": "Lives in Lyon", "graph": {}})
    atlas, lyon = await extract_with_llm(ScriptedLLM(reply), "…", "")
    assert (atlas.text, atlas.importance) == ("Project Atlas uses PostgreSQL", 2)
    assert atlas.graph is not None
    with pytest.raises(MalformedGraph):
        parse_graph_json(atlas.graph)
    assert lyon.graph is not None and not parse_graph_json(lyon.graph)


async def test_an_answer_without_graphs_is_read_as_before() -> None:
    [fact] = await extract_with_llm(ScriptedLLM(_answer({"text": "Likes tea"})), "I like tea", "")
    assert (fact.text, fact.graph) == ("Likes tea", None)
