"""Conversation -> extraction job -> graph, on both backends: the rules and the LLM's
graph part become entities and relations carrying the memory they came from, and a
change closes the relation it contradicts the way it closes the memory."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from scripted_llm import ScriptedLLM

from truemem_core import TrueMem

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _said(memory: TrueMem, *lines: tuple[str, datetime]) -> None:
    for n, (text, at) in enumerate(lines):
        memory.record_messages("ana", f"s{n}", [("user", text, at), ("assistant", "Noted.", at)])
    memory.drain()


def _memory_id(memory: TrueMem, text: str) -> str:
    [found] = [m.id for m in memory.list_memories("ana", include_archived=True)
               if m.text == text]
    return found


def test_rules_fill_the_graph_and_a_move_closes_the_old_place(memory: TrueMem) -> None:
    _said(memory, ("I live in Madrid.", T0),
          ("I use PostgreSQL 14 for our billing database.", T0 + timedelta(days=1)),
          ("I moved to Berlin last month.", T0 + timedelta(days=30)),
          ("I use PostgreSQL 16 now.", T0 + timedelta(days=40)))
    now = memory.graph.list_relations("ana", "user")
    assert {(r.source, r.type, r.target, r.valid_to) for r in now} == {
        ("user", "lives_in", "Berlin", None), ("user", "uses", "PostgreSQL 16", None)}
    berlin = next(r for r in now if r.target == "Berlin")
    assert berlin.evidence_memory_ids == (_memory_id(memory, "Moved to Berlin last month"),)
    assert berlin.valid_from == T0 + timedelta(days=30)
    then = memory.graph.list_relations("ana", "user", valid_at=T0 + timedelta(days=2))
    assert {(r.type, r.target, r.valid_to) for r in then} == {
        ("lives_in", "Madrid", T0 + timedelta(days=30)),
        ("uses", "PostgreSQL 14", T0 + timedelta(days=40))}
    madrid = next(r for r in then if r.target == "Madrid")
    assert madrid.evidence_memory_ids == (_memory_id(memory, "Lives in Madrid"),)
    assert memory.graph.get_entity("ana", "PostgreSQL 14").type == "tool"
    assert memory.graph.list_relations("bob") == []


@pytest.mark.parametrize("write", ["add_memory", "add_memories"])
def test_a_relation_ends_with_the_memory_a_fact_without_its_own_closed(
    memory: TrueMem, write: str
) -> None:
    """The new fact gives the graph nothing to replace the old relation with (a call that
    writes no graph, or words the rules read no relation in): the relation its closed
    memory was the evidence of ends all the same, as the memory did."""
    _said(memory, ("I live in Lisbon.", T0), ("I work at Globex.", T0))
    lisbon = _memory_id(memory, "Lives in Lisbon")
    if write == "add_memory":
        memory.add_memory("ana", "Lives in Porto")
    else:
        memory.add_memories("ana", ["Likes tea", "Lives in Porto"])
    assert memory.get_memory("ana", lisbon).valid_to is not None
    now = memory.graph.list_relations("ana", "user")
    assert ("lives_in", "Lisbon") not in {(r.type, r.target) for r in now}
    assert ("works_at", "Globex") in {(r.type, r.target) for r in now}  # other evidence
    then = memory.graph.list_relations("ana", "user", valid_at=T0 + timedelta(hours=1))
    assert ("lives_in", "Lisbon") in {(r.type, r.target) for r in then}


def test_a_relation_ends_with_the_memory_the_user_called_wrong(memory: TrueMem) -> None:
    _said(memory, ("I live in Lisbon.", T0), ("I work at Globex.", T0))
    memory.feedback("ana", _memory_id(memory, "Lives in Lisbon"), "wrong")
    now = memory.graph.list_relations("ana", "user")
    assert {(r.type, r.target) for r in now} == {("works_at", "Globex")}
    then = memory.graph.list_relations("ana", "user", valid_at=T0 + timedelta(hours=1))
    assert ("lives_in", "Lisbon") in {(r.type, r.target) for r in then}


def test_a_fact_whose_graph_part_has_no_relation_still_ends_what_its_memory_closed(
    store_url: str
) -> None:
    lisbon = json.dumps({"facts": [{"text": "Lives in Lisbon", "importance": 4, "graph": {
        "relations": [{"from": "user", "type": "lives_in", "to": "Lisbon"}]}}]})
    porto = json.dumps({"facts": [{"text": "Lives in Porto", "importance": 4, "graph": {
        "observations": [{"entity": "Porto", "text": "A city in the north of Portugal"}]}}]})
    with TrueMem(store_url, llm=ScriptedLLM(lisbon, porto)) as memory:
        moved = T0 + timedelta(days=3)
        _said(memory, ("I live in Lisbon.", T0), ("Porto is home now.", moved))
        assert memory.get_memory("ana", _memory_id(memory, "Lives in Lisbon")).valid_to
        assert memory.graph.list_relations("ana", "user", type="lives_in") == []
        [then] = memory.graph.list_relations("ana", "user", type="lives_in", valid_at=T0)
        assert (then.target, then.valid_to) == ("Lisbon", moved)  # when the move was said


def test_the_llm_graph_part_is_stored_with_its_memory(store_url: str) -> None:
    graph = {
        "entities": [{"name": "Atlas", "type": "project"}, {"name": "db-01", "type": "server"}],
        "relations": [
            {"from": "Atlas", "type": "uses", "to": "db-01"},
            {"from": "disk full on db-01", "type": "caused", "to": "Atlas outage",
             "evidence": "the disk on db-01 filled up and Atlas went down"}],
        "observations": [{"entity": "db-01", "text": "Its disk filled up in March"}]}
    reply = json.dumps({"facts": [
        {"text": "Project Atlas went down when db-01's disk filled up", "importance": 3,
         "kind": "episodic", "graph": graph},
        {"text": "Works at Globex Corporation", "importance": 4, "graph": {"relations": 3}}]})
    with TrueMem(store_url, llm=ScriptedLLM(reply)) as memory:
        _said(memory, ("Atlas went down: the disk on db-01 filled up. I work at Globex.", T0))
        atlas = _memory_id(memory, "Project Atlas went down when db-01's disk filled up")
        [uses] = memory.graph.list_relations("ana", "Atlas", type="uses")
        assert (uses.target, uses.evidence_memory_ids) == ("db-01", (atlas,))
        [hop] = memory.graph.causes("ana", "Atlas outage")
        assert (hop.relation.source, hop.relation.evidence) == (
            "disk full on db-01", "the disk on db-01 filled up and Atlas went down")
        [seen] = memory.graph.list_observations("ana", "db-01")
        assert (seen.text, seen.source_memory_id) == ("Its disk filled up in March", atlas)
        # the malformed graph part was dropped: the rules read the fact instead
        [job] = memory.graph.list_relations("ana", "user", type="works_at")
        assert job.target == "Globex Corporation"
        assert job.evidence_memory_ids == (_memory_id(memory, "Works at Globex Corporation"),)


def test_a_graph_the_store_refuses_costs_no_memory(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    mercury = {"entities": [{"name": "Mercury", "type": "planet"},
                            {"name": "Mercury", "type": "element"}]}
    studies = {"relations": [{"from": "user", "type": "studies", "to": "Mercury"}]}
    first, second = "Owns a telescope for planets", "Writes a thesis on quicksilver toxicity"
    llm = ScriptedLLM(json.dumps({"facts": [{"text": first, "graph": mercury}]}),
                      json.dumps({"facts": [{"text": second, "graph": studies}]}))
    with TrueMem(store_url, llm=llm) as memory, caplog.at_level(logging.WARNING):
        _said(memory, ("Mercury fascinates me.", T0), ("I study Mercury.", T0))
        assert {m.text for m in memory.list_memories("ana")} == {first, second}
        assert memory.graph.list_relations("ana", type="studies") == []
        assert f"graph facts of {second!r} not stored" in caplog.text
