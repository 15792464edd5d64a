"""BEAM in benchmarks/end_to_end.py: how a chat becomes dated sessions, which messages a
probing question names, and how served messages map back to BEAM's ids. The chats are
tiny synthetic ones in BEAM's shape, never the real data."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from truemem_core import Settings, default_embedder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from end_to_end import (
    Bench,
    beam_batches,
    beam_chats,
    beam_questions,
    beam_sources,
    recorded_ids,
    run_beam,
)

MARCH_15, APRIL_2 = datetime(2024, 3, 15, tzinfo=UTC), datetime(2024, 4, 2, tzinfo=UTC)


def message(id_: int, role: str, content: str, anchor: str | None = None) -> dict[str, Any]:
    return {"id": id_, "role": role, "content": content,
            **({"time_anchor": anchor} if anchor else {})}


# three batches: the first dated by its first message (BEAM's files), the second by the
# batch itself, the third by nothing (it keeps the second's date); a blank turn in batch 2
CHAT: list[dict[str, Any]] = [
    {"batch_number": 1, "time_anchor": None, "turns": [
        [message(0, "user", "I am planning a trip to Lisbon in May.", "March-15-2024"),
         message(1, "assistant", "Lisbon in May is lovely; book the tram tour early.")],
        [message(2, "user", "My cat Zorblax is allergic to tuna."),
         message(3, "assistant", "Then pick a tuna-free food for Zorblax.")]]},
    {"batch_number": 2, "time_anchor": "April-02-2024", "turns": [
        [message(4, "user", "   "), message(5, "assistant", "Could you say that again?")],
        [message(6, "user", "I moved the Lisbon trip to June."),
         message(7, "assistant", "Noted: Lisbon in June.")]]},
    {"batch_number": 3, "time_anchor": None, "turns": [
        [message(8, "user", "I started learning Portuguese on Duolingo."),
         message(9, "assistant", "Boa sorte with Portuguese!")]]},
]
PROBING: dict[str, list[dict[str, Any]]] = {
    "abstention": [{"question": "What is my sister's name?", "source_chat_ids": None}],
    "information_extraction": [{"question": "What is my cat Zorblax allergic to?",
                                "source_chat_ids": [2]}],
    "knowledge_update": [{"question": "When is my Lisbon trip?",
                          "source_chat_ids": {"original_info": [0], "updated_info": [6]}}],
    "event_ordering": [{"question": "In what order did I plan things?",
                        "source_chat_ids": [0, [6, 8], [8]]}],
    "preference_following": [{"question": "Suggest a cat food.", "source_chat_ids": []}],
    "instruction_following": [{"question": "Wish me luck in Portuguese.",
                               "source_chat_ids": [9]}],
    "temporal_reasoning": [{"question": "How long after Lisbon did I start Portuguese?",
                            "source_chat_ids": {"first_event": [0],
                                                "second_event": [999]}}],
}


def test_one_session_per_batch_each_message_dated_by_its_batch_anchor() -> None:
    sessions = beam_batches(CHAT)
    assert [name for name, _ in sessions] == ["batch_1", "batch_2", "batch_3"]
    assert [[(i, said_at) for i, _, _, said_at in turns] for _, turns in sessions] == [
        [(0, MARCH_15), (1, MARCH_15), (2, MARCH_15), (3, MARCH_15)],
        [(4, APRIL_2), (5, APRIL_2), (6, APRIL_2), (7, APRIL_2)],
        [(8, APRIL_2), (9, APRIL_2)]]
    assert sessions[0][1][2][1:3] == ("user", "My cat Zorblax is allergic to tuna.")


def test_a_message_before_any_anchor_is_refused() -> None:
    undated = [{"batch_number": 1, "time_anchor": None,
                "turns": [[message(0, "user", "hello")]]}]
    with pytest.raises(ValueError, match="before any time_anchor"):
        beam_batches(undated)


def test_source_ids_from_lists_dicts_and_nested_lists_once_each() -> None:
    assert beam_sources([28, 30]) == [28, 30]
    assert beam_sources({"first_statement": [24], "second_statement": [58, 24]}) == [24, 58]
    assert beam_sources([68, [294, 306], [[410], 68]]) == [68, 294, 306, 410]
    assert beam_sources(None) == [] and beam_sources({}) == []


def test_questions_naming_no_source_are_left_out() -> None:
    assert beam_questions(PROBING) == [
        ("information_extraction", "What is my cat Zorblax allergic to?", [2]),
        ("knowledge_update", "When is my Lisbon trip?", [0, 6]),
        ("event_ordering", "In what order did I plan things?", [0, 6, 8]),
        ("instruction_following", "Wish me luck in Portuguese.", [9]),
        ("temporal_reasoning", "How long after Lisbon did I start Portuguese?", [0, 999])]


def test_recorded_ids_skip_blank_turns_and_keep_the_rest_aligned() -> None:
    assert recorded_ids([11, None, 12], [4, 5, 6]) == {11: 4, 12: 6}


def test_chats_in_size_then_number_order_first_n_of_each(tmp_path: Path) -> None:
    for name in ("100K_10", "100K_2", "500K_3", "1M_1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "chat.json").write_text("[]")
    (tmp_path / "100K_4").mkdir()  # no chat.json: not a chat
    assert [p.name for p in beam_chats(tmp_path, ["100K", "500K"], None)] == [
        "100K_2", "100K_10", "500K_3"]
    assert [p.name for p in beam_chats(tmp_path, ["100K", "1M"], 1)] == ["100K_2", "1M_1"]


def test_a_chat_through_the_product_path(store_url: str, tmp_path: Path) -> None:
    chat = tmp_path / "100K_1"
    chat.mkdir()
    (chat / "chat.json").write_text(json.dumps(CHAT))
    (chat / "probing_questions.json").write_text(json.dumps(PROBING))
    bench = Bench(store_url, default_embedder(), "", Settings())
    try:
        result = run_beam(bench, beam_chats(tmp_path, ["100K"], None))
        exported = bench.served.export_user("beam-100K_1")["sessions"]
    finally:
        bench.close()
    assert [(s["session_id"], [datetime.fromisoformat(m["created_at"]).date()
                               for m in s["messages"]]) for s in exported] == [
        ("batch_1", [MARCH_15.date()] * 4), ("batch_2", [APRIL_2.date()] * 3),
        ("batch_3", [APRIL_2.date()] * 2)]
    [row] = result["chats"]
    assert (row["chat"], row["messages"], row["recorded"], row["questions"]) == (
        "100K_1", 10, 9, 5)
    sizes = result["sizes"]["100K"]
    assert sizes["questions"] == {"information_extraction": 1, "knowledge_update": 1,
                                  "event_ordering": 1, "instruction_following": 1,
                                  "temporal_reasoning": 1, "overall": 5}
    # the whole tiny chat fits the budget: every named message in it is served (the last
    # one too, though a blank turn before it was skipped), the one it lacks (999) is not
    assert sizes["served"]["recall"]["information_extraction"] == 100.0
    assert sizes["served"]["recall"]["instruction_following"] == 100.0
    assert sizes["served"]["recall"]["temporal_reasoning"] == 50.0
    assert result["sources"] == {"named": 9, "not in the chat": 1}
    assert sizes["full context"]["recall"]["temporal_reasoning"] == 50.0
