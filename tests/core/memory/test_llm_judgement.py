"""The LLM's side of the memory model, on both backends: the stored facts it is
shown, the ones it says a new fact replaces, and the kind it gives."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from db_access import rows
from scripted_llm import ScriptedLLM
from sqlalchemy import select

from truemem_core import InvalidInputError, TrueMem
from truemem_core.language.classify import classify_kind
from truemem_core.memory import write
from truemem_core.memory.decision import decide
from truemem_core.storage.schema import jobs, memories

_HANDLE_LINE = re.compile(r"^- (m\d+): (.*)$", re.MULTILINE)


def _answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


def _globex(replaces: Any) -> dict[str, Any]:
    return {"text": "Works at Globex", "importance": 4, "kind": "semantic", "replaces": replaces}


def _validity(memory: TrueMem, memory_id: str) -> Any:
    [row] = rows(memory, select(
        memories.c.state, memories.c.valid_to, memories.c.invalidated_at,
        memories.c.superseded_by).where(memories.c.id == memory_id))
    return row


def _still_current(memory: TrueMem, memory_id: str) -> bool:
    row = _validity(memory, memory_id)
    return (row.state, row.valid_to, row.superseded_by) == ("active", None, None)


def _record(memory: TrueMem, message: str) -> None:
    memory.record("ana", "s", message, "Noted.")
    memory.drain()
    assert {row.status for row in rows(memory, select(jobs.c.status))} == {"done"}


def test_the_prompt_shows_the_users_current_facts_by_handle(store_url: str) -> None:
    llm = ScriptedLLM(_answer())
    with TrueMem(store_url, llm=llm) as memory:
        for text in ("Employed by Initech", "Lives in Madrid", "Has a cat named Miso",
                     "Prefers tea", "Prefers coffee"):  # coffee supersedes tea (rules)
            memory.add_memory("ana", text)
        memory.add_memory("bob", "Employed by Umbrella Corporation")
        _record(memory, "I'm thinking of changing jobs.")
        prompt = llm.prompts[0][1]["content"]
        shown = dict(_HANDLE_LINE.findall(prompt))
        assert sorted(shown) == ["m1", "m2", "m3", "m4"]
        assert set(shown.values()) == {
            "Employed by Initech", "Lives in Madrid", "Has a cat named Miso", "Prefers coffee"}
        assert "Umbrella" not in prompt and "Prefers tea" not in prompt
        stored = memory.list_memories("ana", include_archived=True)
        assert not any(m.id in prompt for m in stored)  # handles, never database ids


def test_a_replacement_judged_by_the_llm_closes_the_old_fact(store_url: str) -> None:
    llm = ScriptedLLM(_answer(_globex(["m1"])))
    with TrueMem(store_url, llm=llm) as memory:
        old = memory.add_memory("ana", "Employed by Initech", importance=4)
        # the rules miss it
        assert decide(old.text, "Works at Globex", similar=False).action == "distinct"
        _record(memory, "I left Initech, I'm at Globex now.")
        [new] = memory.list_memories("ana")
        assert (new.text, new.source) == ("Works at Globex", "extracted")
        closed = _validity(memory, old.id)
        assert (closed.state, closed.superseded_by) == ("archived", new.id)
        assert closed.valid_to is not None and closed.invalidated_at is not None
        event = memory.history("ana", old.id)[-1]
        assert event.action == "superseded"
        assert event.reason == f"judged by the LLM: Works at Globex (by {new.id})"
        # out of the context, still in history
        context = memory.get_context("ana", "s2", "Where do I work?")
        assert not any("Initech" in m.text for m in context.facts)
        assert old.id in {m.id for m in memory.list_memories("ana", include_archived=True)}


@pytest.mark.parametrize("replaces", [["m2"], ["m9", "memory 1", "42"], [], "m1", {"m1": 1},
                                      [None, 1, ["m1"], {"id": "m1"}]])
def test_unknown_or_malformed_handles_close_nothing(store_url: str, replaces: Any) -> None:
    llm = ScriptedLLM(_answer(_globex(replaces),
                              {"text": "Has a dog named Rex", "replaces": replaces}))
    with TrueMem(store_url, llm=llm) as memory:
        old = memory.add_memory("ana", "Employed by Initech", importance=4)
        _record(memory, "I'm at Globex now, and we adopted a dog, Rex.")
        assert {m.text for m in memory.list_memories("ana")} == {
            "Employed by Initech", "Works at Globex", "Has a dog named Rex"}
        assert _still_current(memory, old.id)


def test_judged_ids_are_checked_again_when_written(memory: TrueMem) -> None:
    bobs = memory.add_memory("bob", "Employed by Umbrella Corporation")
    madrid = memory.add_memory("ana", "Lives in Madrid")
    berlin = memory.add_memory("ana", "Lives in Berlin")  # closes Madrid (rules)

    # The LLM's handles are mapped to ids before the write, so no public call hands
    # the writer an id the handles did not vouch for: this calls the writer itself,
    # on TrueMem's loop, to check its own defence.
    async def add(supersedes: Any) -> Any:
        store = memory._core.memories
        candidate = await store.candidate(
            "ana", "Works at Globex", importance=4, kind=None, source="extracted",
            supersedes=supersedes)
        async with store.db.transaction() as conn:
            return await write.add(conn, store.deps, candidate, admit=True)

    new = memory._loop.run(add([bobs.id, madrid.id, "no-such-id"]))
    assert new is not None and new.text == "Works at Globex"
    assert _still_current(memory, bobs.id)  # another user's fact
    assert _validity(memory, madrid.id).superseded_by == berlin.id  # already closed: untouched
    assert [e.action for e in memory.history("bob", bobs.id)] == ["added"]
    for bad in ([42], bobs.id):
        with pytest.raises(InvalidInputError, match="supersedes"):
            memory._loop.run(add(bad))


def test_an_extracted_fact_never_supersedes_an_explicit_one(store_url: str) -> None:
    llm = ScriptedLLM(_answer(_globex(["m1"])))
    with TrueMem(store_url, llm=llm) as memory:
        kept = memory.add_memory("ana", "Employed by Initech", importance=5, source="explicit")
        _record(memory, "I'm at Globex now.")
        assert _still_current(memory, kept.id)
        assert "superseded" not in {e.action for e in memory.history("ana", kept.id)}


def test_the_llms_kind_is_stored_and_manual_adds_use_the_rules(store_url: str) -> None:
    text = "Was promoted to staff engineer"
    llm = ScriptedLLM(_answer({"text": text, "importance": 3, "kind": "episodic"}))
    with TrueMem(store_url, llm=llm) as memory:
        _record(memory, "Great news, I got promoted to staff engineer today!")
        assert [(m.text, m.kind) for m in memory.list_memories("ana")] == [(text, "episodic")]
        assert classify_kind(text) == "semantic"  # so the kind above is the LLM's
        assert memory.add_memory("bob", text).kind == "semantic"
