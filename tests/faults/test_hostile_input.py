"""Hostile input, on both backends: rejected before anything is written, or stored verbatim;
never a crash of the driver, never another user's data, never internals in a message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fault_tools import assert_clean_message, hostile_ids

from truemem_core import InvalidInputError, TrueMem

LIMIT = 100_000  # Settings().max_message_chars, the default every app starts with


def calls_with(text: str) -> dict[str, Callable[[TrueMem], Any]]:
    """Every public call that takes a message or a memory text, given ``text``."""
    return {
        "get_context": lambda m: m.get_context("ana", "s", text),
        "record said": lambda m: m.record("ana", "s", text, "ok"),
        "record reply": lambda m: m.record("ana", "s", "hi", text),
        "record_messages": lambda m: m.record_messages("ana", "s", [("system", text)]),
        "add_memory": lambda m: m.add_memory("ana", text),
        "import_user": lambda m: m.import_user("ana", {
            "format": "truemem.user/1", "memories": [], "sessions": [{
                "session_id": "s", "summary": None, "created_at": "2025-01-01T00:00:00+00:00",
                "messages": [{"role": "user", "content": text, "summarized": False,
                              "created_at": "2025-01-01T00:00:00+00:00"}]}]}),
    }


def assert_nothing_stored(memory: TrueMem, user: str = "ana") -> None:
    exported = memory.export_user(user)
    assert (exported["memories"], exported["sessions"]) == ([], [])


def test_a_message_over_the_limit_is_rejected_and_nothing_is_written(memory: TrueMem) -> None:
    huge = "remember that " * (LIMIT // 14) + "x" * 100  # the old 36-second input, too long
    assert len(huge) > LIMIT
    for name, call in calls_with(huge).items():
        if name in ("add_memory", "import_user"):  # memory texts have their own, lower limit
            continue
        with pytest.raises(InvalidInputError) as caught:
            call(memory)
        assert "limit" in str(caught.value)
        assert_clean_message(caught.value, secrets=["remember that remember"])
    memory.drain(timeout=60)
    assert_nothing_stored(memory)


def test_just_under_the_limit_returns_and_stores_at_most_twenty_facts(memory: TrueMem) -> None:
    bare = "remember that " * 7000
    # 2,000 requests, 200 distinct: over 250 distinct words trips another bug on SQLite
    # (see test_pending_bugs.py)
    many = "".join(f"Remember that my locker number {n % 200} is blue. " for n in range(2000))
    assert len(bare) < LIMIT and len(many) < LIMIT
    context = memory.get_context("ana", "s", bare)
    assert len(context.explicit) <= 20
    context = memory.get_context("ana", "s", many)
    assert 1 <= len(context.explicit) <= 20  # the cap, not a detector that found nothing
    memory.record("ana", "s", many, "Noted.")  # the extraction job sees them again
    memory.drain(timeout=60)
    stored = memory.list_memories("ana")
    assert 1 <= len(stored) <= 20
    assert all("locker number" in m.text for m in stored)


def test_nul_and_lone_surrogates_are_invalid_input_everywhere(memory: TrueMem) -> None:
    kept = memory.add_memory("ana", "Lives in Porto")
    for bad in ["NUL \x00 inside", "lone \ud800 surrogate", "low \udfff one"]:
        calls = {
            **calls_with(bad),
            "update_memory": lambda m, bad=bad: m.update_memory("ana", kept.id, text=bad),
            "search": lambda m, bad=bad: m.search("ana", bad),
        }
        for name, call in calls.items():
            with pytest.raises(InvalidInputError) as caught:
                call(memory)
            assert_clean_message(caught.value, secrets=[bad])
            said = str(caught.value)
            assert "NUL" in said or "surrogate" in said, f"{name}: {said}"
    memory.drain(timeout=60)
    assert [m.text for m in memory.list_memories("ana")] == ["Lives in Porto"]
    assert memory.export_user("ana")["sessions"] == []


def test_ids_with_control_invisible_or_surrogate_characters_are_rejected(
    memory: TrueMem,
) -> None:
    for label, bad in hostile_ids().items():
        calls: list[Callable[[], Any]] = [
            lambda bad=bad: memory.record(bad, "s", "hi", "ok"),
            lambda bad=bad: memory.record("ana", bad, "hi", "ok"),
            lambda bad=bad: memory.get_context(bad, "s", "hi"),
            lambda bad=bad: memory.get_context("ana", bad, "hi"),
            lambda bad=bad: memory.add_memory(bad, "Lives in Porto"),
            lambda bad=bad: memory.list_memories(bad),
            lambda bad=bad: memory.export_user(bad),
            lambda bad=bad: memory.erase_user(bad),
        ]
        for call in calls:
            with pytest.raises(InvalidInputError) as caught:
                call()
            assert_clean_message(caught.value, secrets=[bad])
            assert "id" in str(caught.value), label
    memory.drain(timeout=60)
    assert_nothing_stored(memory)


LOOK_ALIKES = ["ana", "\u0430na", "an\u0430", "\uff41na", "ANA"]  # Latin, Cyrillic а, fullwidth


def test_look_alike_ids_are_different_users_that_never_see_each_other(memory: TrueMem) -> None:
    for n, user in enumerate(LOOK_ALIKES):
        memory.add_memory(user, f"Has the secret code Zq{n}x")
        memory.record(user, "s", f"My dog is named Rex{n}.", "Nice.")
    memory.drain(timeout=60)
    for n, user in enumerate(LOOK_ALIKES):
        mine = {f"Zq{n}x", f"Rex{n}"}
        others = {f"Zq{k}x" for k in range(len(LOOK_ALIKES)) if k != n} | {
            f"Rex{k}" for k in range(len(LOOK_ALIKES)) if k != n}
        seen = " ".join([
            *(m.text for m in memory.list_memories(user)),
            *(h.memory.text for h in memory.search(user, "secret code dog named Rex")),
            memory.get_context(user, "s2", "What is my secret code and my dog?").to_system_prompt(),
            repr(memory.export_user(user)),
        ])
        assert all(word in seen for word in mine)
        assert not [word for word in others if word in seen], f"{user!r} sees another user"


INJECTIONS = [
    "'; DROP TABLE memories; --",
    "Robert'); DELETE FROM messages WHERE ('1'='1",
    "' OR '1'='1' --",
    "%s %(user_id)s :user_id $1 ? \\x00 \\' \"quoted\"",
    "100% of _underscores_ and %wildcards%",
    "1; SELECT pg_sleep(5); --",
]


def test_sql_looking_strings_are_stored_and_read_back_verbatim(memory: TrueMem) -> None:
    victim = memory.add_memory("victim", "Has a parrot called Polly")
    for hostile in INJECTIONS:
        check_verbatim(memory, hostile, victim.id)


def check_verbatim(memory: TrueMem, hostile: str, victim: str) -> None:
    memory.record(hostile, hostile, hostile, hostile)  # as user, session and both messages
    added = memory.add_memory(hostile, f"Note: {hostile}")
    assert memory.get_memory(hostile, added.id).text == f"Note: {hostile}"
    state = memory.sessions.get(hostile, hostile)
    assert [m.content for m in state.recent] == [hostile, hostile]
    found = memory.search(hostile, hostile, mode="keyword") + memory.search(hostile, hostile)
    assert {h.memory.user_id for h in found} <= {hostile}
    context = memory.get_context(hostile, hostile, hostile)
    assert victim not in {m.id for m in context.facts}
    memory.drain(timeout=60)
    exported = memory.export_user(hostile)
    assert exported["user_id"] == hostile
    assert [s["session_id"] for s in exported["sessions"]] == [hostile]
    assert [m.text for m in memory.list_memories("victim")] == ["Has a parrot called Polly"]
    assert memory.erase_user(hostile) >= 1
    assert memory.list_memories(hostile) == []
    assert [m.id for m in memory.list_memories("victim")] == [victim]
