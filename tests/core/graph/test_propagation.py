"""Propagated importance: a memory held up by important, often-retrieved memories
through the entities they share decays slower than an identical isolated one."""

from __future__ import annotations

import json
from datetime import timedelta

from db_access import execute, rows
from scripted_llm import ScriptedLLM
from sqlalchemy import select, update

from truemem_core import TrueMem
from truemem_core.graph.propagation import support
from truemem_core.storage.schema import memories, utcnow


def test_support_comes_from_the_neighbourhood_not_from_the_memory_itself() -> None:
    strengths = {"hub1": 0.9, "hub2": 0.9, "leaf": 0.4, "alone": 0.4, "own": 0.4,
                 "far": 0.4, "echo": 0.4}
    links = [("hub1", "e:atlas"), ("hub2", "e:atlas"), ("leaf", "e:atlas"),
             ("own", "e:lonely"),  # an entity only it points to
             ("far", "e:db"), ("e:db", "e:atlas"),  # two hops from the hub
             ("echo", "e:a"), ("e:a", "e:b"),  # its own importance coming back
             ("hub1", "hub1"), ("leaf", "e:atlas")]
    held = support(strengths, links)
    assert held["alone"] == held["own"] == held["echo"] == 0.0
    assert held["leaf"] > 0 and held["far"] > 0
    assert all(0.0 <= value <= 1.0 for value in held.values())


def test_support_grows_with_the_neighbours_strength() -> None:
    def leaf(neighbour: float) -> float:
        held = support({"n": neighbour, "leaf": 0.4, "a": 0.4, "b": 0.4, "c": 0.4},
                       [("n", "e:x"), ("leaf", "e:x")])
        return held["leaf"]

    assert 0 < leaf(0.1) < leaf(0.3) < leaf(0.6)


def _fact(text: str, about: str | None) -> dict[str, object]:
    graph = {"observations": [{"entity": about, "text": text}]} if about else {}
    return {"text": text, "importance": 2, "kind": "semantic", "graph": graph}


def test_a_memory_linked_to_a_hub_decays_slower(store_url: str) -> None:
    atlas = "Atlas"
    facts = [
        _fact("Atlas is the billing platform rewrite", atlas),
        _fact("Atlas ships every second Tuesday", atlas),
        _fact("Atlas stores invoices in PostgreSQL", atlas),
        _fact("Atlas dashboards live in Grafana", atlas),
        _fact("Collects vintage fountain pens", None),
    ]
    with TrueMem(store_url, llm=ScriptedLLM(json.dumps({"facts": facts}))) as memory:
        memory.record("ana", "s", "Atlas: billing rewrite, Tuesdays, PostgreSQL, Grafana. "
                      "I collect fountain pens.", "Noted.")
        memory.drain()
        by_text = {m.text: m.id for m in memory.list_memories("ana")}
        assert set(by_text) == {f["text"] for f in facts}
        hub = [by_text[f"Atlas {rest}"] for rest in (
            "is the billing platform rewrite", "ships every second Tuesday",
            "stores invoices in PostgreSQL")]
        linked, isolated = by_text["Atlas dashboards live in Grafana"], by_text[
            "Collects vintage fountain pens"]
        month_ago = utcnow() - timedelta(days=40)
        execute(memory, update(memories).where(memories.c.user_id == "ana").values(
            created_at=month_ago, last_accessed_at=month_ago))
        execute(memory, update(memories).where(memories.c.id.in_(hub)).values(retrievals=12))
        memory.admin.maintain("ana")
        scores = dict(rows(memory, select(memories.c.id, memories.c.dynamic_score).where(
            memories.c.id.in_([linked, isolated]))))
        assert scores[linked] > scores[isolated] > 0
