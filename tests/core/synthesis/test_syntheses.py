"""Syntheses: a summary of each past session that keeps its sources, rebuilt when the
session grows, gone with the session or the user, exported and imported, never
another user's, and served in the context's one token budget with its date span."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from truemem_core import ChatMessage, Context, Settings, TrueMem
from truemem_core.cli import main
from truemem_core.embeddings import TiktokenCounter
from truemem_core.records import fact_line, synthesis_line, turn_line
from truemem_core.synthesis.extractive import PART_MESSAGES
from truemem_core.synthesis.written import PROMPT as SYNTHESIS_PROMPT

MARCH = datetime(2024, 3, 8, 14, 30, tzinfo=UTC)

GARDEN = [
    ("user", "I started a vegetable garden behind the house this spring.", MARCH),
    ("assistant", "Lovely! What are you planting first?", MARCH),
    ("user", "Thanks!", MARCH),
    ("assistant", "You're welcome.", MARCH),
    ("user", "I planted tomatoes and basil in the raised beds on Saturday.",
     MARCH + timedelta(days=1)),
    ("assistant", "Tomatoes and basil grow well together.", MARCH + timedelta(days=1)),
]

BOAT = [("user", "I bought a wooden sailing boat called Marlin."), ("assistant", "Ahoy!"),
        ("user", "Marlin needs new sails before the winter."), ("assistant", "Indeed."),
        ("user", "I moor her at the marina in Vigo."), ("assistant", "Nice.")]


def test_a_session_synthesis_keeps_the_sentences_it_draws_on_and_only_their_sources(
    memory: TrueMem,
) -> None:
    ids = memory.record_messages("ana", "garden", GARDEN)
    memory.drain()
    [synthesis] = memory.syntheses.list("ana")
    assert (synthesis.kind, synthesis.key) == ("session", "garden")
    assert synthesis.text == ("I started a vegetable garden behind the house this spring. "
                              "I planted tomatoes and basil in the raised beds on Saturday.")
    # "Thanks!" said nothing and the assistant's words are not in it: not its sources
    assert synthesis.message_ids == [ids[0], ids[4]]
    assert (synthesis.first_at, synthesis.last_at) == (MARCH, MARCH + timedelta(days=1))
    assert synthesis_line(synthesis).startswith("- [2024-03-08 to 2024-03-09] I started")


def test_a_session_of_three_user_messages_gets_a_synthesis_rebuilt_as_it_grows(
    memory: TrueMem,
) -> None:
    first = memory.record("ana", "garden", "I started a vegetable garden this spring.", "Nice!")
    later = memory.record_messages("ana", "garden", [
        ("user", "The slugs ate every lettuce seedling in April."), ("assistant", "Oh no.")])
    assert f"synthesize:{first.assistant_message_id}" in first.jobs  # one job a record
    memory.drain()
    assert memory.syntheses.list("ana") == []  # two messages: its turns say it as briefly
    memory.record("ana", "garden", "We moved the beds under a net in May.", "Good idea.")
    memory.drain()
    [synthesis] = memory.syntheses.list("ana")
    assert synthesis.message_ids[:2] == [first.user_message_id, later[0]]
    assert "slugs ate every lettuce" in synthesis.text and "net in May" in synthesis.text
    memory.record("ana", "garden", "The first tomatoes ripened in late July.", "Lovely.")
    memory.drain()
    [rebuilt] = memory.syntheses.list("ana")
    assert rebuilt.id == synthesis.id and "tomatoes ripened" in rebuilt.text
    assert len(rebuilt.message_ids) == 4
    # its words are indexed again: found by what the rebuild added
    assert "keyword" in memory.get_context("ana", "new", "ripened").syntheses[0].channels


def test_only_the_job_of_the_latest_record_writes_it(store_url: str) -> None:
    llm = _Writer(json.dumps({"points": [
        {"text": "Grew tomatoes that ripened in July", "sources": [1, 4]}]}))
    with TrueMem(store_url, llm=llm) as memory:
        ids = memory.record_messages("ana", "garden", GARDEN)
        later = memory.record("ana", "garden", "The first tomatoes ripened in late July.", "Ok.")
        memory.drain()
        [synthesis] = memory.syntheses.list("ana")
        assert synthesis.message_ids == [ids[0], later.user_message_id]
        assert len(llm.prompts) == 1  # the first record's job found a later one and stopped
        assert "[4] (" in llm.prompts[0][1]["content"]  # it read the session as it is now


def test_a_cleared_session_takes_its_synthesis_and_erasure_takes_them_all(
    memory: TrueMem,
) -> None:
    memory.record_messages("ana", "garden", GARDEN)
    memory.record_messages("ana", "kitchen", BOAT)
    memory.drain()
    assert {s.key for s in memory.syntheses.list("ana")} == {"garden", "kitchen"}
    memory.sessions.clear("ana", "garden")
    assert [s.key for s in memory.syntheses.list("ana")] == ["kitchen"]
    context = memory.get_context("ana", "new", "What did I plant in the garden beds?")
    assert "tomatoes" not in context.to_system_prompt()
    memory.erase_user("ana")
    assert memory.syntheses.list("ana") == []


def test_a_job_that_read_a_session_cleared_meanwhile_writes_no_synthesis(
    memory: TrueMem,
) -> None:
    memory.record_messages("ana", "garden", GARDEN)
    # the session is cleared before the worker gets to its jobs
    memory.sessions.clear("ana", "garden")
    memory.drain()
    assert memory.syntheses.list("ana") == []


def test_syntheses_are_never_another_users(memory: TrueMem) -> None:
    memory.record_messages("ana", "garden", GARDEN)
    memory.record_messages("bob", "boat", BOAT)
    memory.drain()
    assert [s.key for s in memory.syntheses.list("bob")] == ["boat"]
    for question in ("What did I plant in the raised beds?", "tomatoes basil garden"):
        context = memory.get_context("bob", "new", question)
        assert all(hit.synthesis.user_id == "bob" for hit in context.syntheses)
        assert "tomatoes" not in context.to_system_prompt()


def test_export_and_import_keep_a_synthesis_with_its_sources_renamed(memory: TrueMem) -> None:
    memory.record_messages("ana", "garden", GARDEN)
    memory.drain()
    exported = memory.export_user("ana")
    [item] = exported["syntheses"]
    assert item["key"] == "garden" and "tomatoes" in item["text"]
    memory.import_user("eve", exported)
    [copy] = memory.syntheses.list("eve")
    [original] = memory.syntheses.list("ana")
    assert (copy.text, copy.first_at, copy.last_at) == (
        original.text, original.first_at, original.last_at)
    eve_said = {m.content: m.id for m in memory.sessions.get("eve", "garden", recent=50).recent}
    assert copy.message_ids == [eve_said[GARDEN[0][1]], eve_said[GARDEN[4][1]]]
    # found by words and by meaning, as the original is
    context = memory.get_context("eve", "new", "What did I plant in the raised beds?")
    assert [hit.synthesis.id for hit in context.syntheses] == [copy.id]


def _lines(context: Context) -> int:
    tokens = TiktokenCounter()
    return (sum(tokens.count(fact_line(hit.memory) + "\n") for hit in context.memories)
            + sum(tokens.count(turn_line(turn) + "\n") for turn in context.recalled)
            + sum(tokens.count(synthesis_line(hit.synthesis) + "\n")
                  for hit in context.syntheses))


def test_a_synthesis_is_served_in_the_one_budget_with_its_span_and_for_its_turns(
    store_url: str,
) -> None:
    with TrueMem(store_url, settings=Settings(context_token_budget=400)) as memory:
        ids = memory.record_messages("ana", "garden", GARDEN)
        memory.drain()
        context = memory.get_context("ana", "new", "How is my vegetable garden going?")
        [hit] = context.syntheses
        assert hit.synthesis.message_ids == [ids[0], ids[4]]
        assert hit.channels and set(hit.ranks) == set(hit.channels)
        assert "- [2024-03-08 to 2024-03-09] I started a vegetable garden" in (
            context.to_system_prompt())
        # a turn it cites is spent only if it ranked above it; the budget holds it all
        cited = [t for t in context.recalled if t.message_id in hit.synthesis.message_ids]
        assert len(cited) < 2 and all(turn.score >= hit.score for turn in cited)
        assert context.budget_spent == _lines(context) <= 400
        assert context.to_dict()["syntheses"][0]["synthesis"]["key"] == "garden"
    with TrueMem(store_url, settings=Settings(context_token_budget=30)) as memory:
        # too long for the budget: not served, and nothing is over it
        context = memory.get_context("ana", "other", "How is my vegetable garden going?")
        assert context.syntheses == [] and context.budget_spent == _lines(context) <= 30


class _Writer(ScriptedLLM):
    """An LLM that writes syntheses, and extracts nothing."""

    def __init__(self, *replies: str) -> None:
        super().__init__(*replies)

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        if messages[0]["content"] != SYNTHESIS_PROMPT:
            return json.dumps({"facts": []})
        return await super().acomplete(messages)


def test_with_an_llm_the_synthesis_is_its_points_and_their_sources(store_url: str) -> None:
    llm = _Writer("not JSON at all", json.dumps({"points": [
        {"text": "Started a vegetable garden", "sources": [1]},
        {"text": "Planted tomatoes and basil in raised beds", "sources": [3, 7]}]}))
    with TrueMem(store_url, llm=llm) as memory:
        ids = memory.record_messages("ana", "garden", GARDEN)
        memory.drain()
        [synthesis] = memory.syntheses.list("ana")
        assert synthesis.text == ("Started a vegetable garden. "
                                  "Planted tomatoes and basil in raised beds.")
        assert synthesis.message_ids == [ids[0], ids[4]]  # 7 was never shown: dropped
        shown = llm.prompts[0][1]["content"]
        assert "[2] (2024-03-08) Thanks!" in shown and "Lovely!" not in shown
        assert len(llm.prompts) == 2  # the garbage answer was retried once, with a correction


def test_with_an_llm_that_answers_garbage_twice_the_synthesis_is_extractive(
    store_url: str,
) -> None:
    with TrueMem(store_url, llm=_Writer("no")) as memory:
        ids = memory.record_messages("ana", "garden", GARDEN)
        memory.drain()
        [synthesis] = memory.syntheses.list("ana")
        assert synthesis.message_ids == [ids[0], ids[4]]
        assert synthesis.text.startswith("I started a vegetable garden")


def test_the_cli_lists_a_users_syntheses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TrueMem(tmp_path / "store.db") as store:
        store.record_messages("ana", "garden", GARDEN)
        store.drain()
    db = ["--database", str(tmp_path / "store.db")]
    assert main([*db, "user", "syntheses", "--user", "ana"]) == 0
    assert capsys.readouterr().out == (
        "session garden (2 messages) [2024-03-08 to 2024-03-09] I started a vegetable garden "
        "behind the house this spring. I planted tomatoes and basil in the raised beds on "
        "Saturday.\n")
    assert main([*db, "user", "syntheses", "--user", "ana", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["key"] == "garden" and listed["first_at"] == "2024-03-08T14:30:00+00:00"
    assert main([*db, "user", "syntheses", "--user", "bob"]) == 0
    assert capsys.readouterr().out == ""


def _planks(n: int, start: int = 0) -> list[tuple[str, str, datetime]]:
    said = [(f"Day {day}: I sanded plank number {day} of the boat Marlin.",
             MARCH + timedelta(days=day)) for day in range(start, start + n)]
    return [turn for line, at in said for turn in (("user", line, at), ("assistant", "Ok.", at))]


def test_a_long_session_is_synthesised_by_stretches_and_an_exchange_rebuilds_the_last(
    store_url: str,
) -> None:
    llm = _Writer(json.dumps({"points": [{"text": "Sanded planks", "sources": [1]}]}))
    with TrueMem(store_url, llm=llm) as memory:
        ids = memory.record_messages("ana", "boat", _planks(2 * PART_MESSAGES + 3))
        memory.drain()
        stretches = memory.syntheses.list("ana")
        assert [(s.key, s.part) for s in stretches] == [("boat", 0), ("boat", 1), ("boat", 2)]
        said = ids[::2]  # the user's messages
        for n, synthesis in enumerate(stretches):  # each draws on its own stretch only
            assert synthesis.message_ids == [said[n * PART_MESSAGES]]
        assert len(llm.prompts) == 3
        memory.record("ana", "boat", "I varnished the mast of Marlin.", "Shiny.")
        memory.drain()
        assert len(llm.prompts) == 4  # the last stretch, not the whole session
        assert "varnished the mast" in llm.prompts[-1][1]["content"]
        assert "plank number 0" not in llm.prompts[-1][1]["content"]
        rebuilt = memory.syntheses.list("ana")
        assert [s.updated_at for s in rebuilt[:2]] == [s.updated_at for s in stretches[:2]]
        assert rebuilt[2].updated_at > stretches[2].updated_at
        memory.sessions.clear("ana", "boat")
        assert memory.syntheses.list("ana") == []  # every stretch goes with the session


def test_export_and_import_keep_each_stretch(memory: TrueMem) -> None:
    memory.record_messages("ana", "boat", _planks(PART_MESSAGES + 3))
    memory.drain()
    exported = memory.export_user("ana")
    assert [s["part"] for s in exported["syntheses"]] == [0, 1]
    memory.import_user("bea", exported)
    assert [(s.key, s.part, s.text) for s in memory.syntheses.list("bea")] == [
        (s.key, s.part, s.text) for s in memory.syntheses.list("ana")]
