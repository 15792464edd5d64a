"""The request cycle on both backends: context, record, explicit memories, jobs."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

import pytest
from db_access import execute, rows
from scripted_llm import ScriptedLLM, facts_json
from sqlalchemy import select, update

from truemem_core import InvalidInputError, Settings, TrueMem
from truemem_core.storage.schema import admission_rejections, jobs, messages, sessions


def test_record_stores_messages_and_context_returns_them(memory: TrueMem) -> None:
    recorded = memory.record("ana", "s1", "Hello there", "Hi! How can I help?")
    memory.drain()
    context = memory.get_context("ana", "s1", "What did I just say?")
    assert [(m.role, m.content) for m in context.recent_messages] == [
        ("user", "Hello there"), ("assistant", "Hi! How can I help?")]
    assert all(m.tokens > 0 and not m.summarized for m in context.recent_messages)
    assert context.recent_messages[0].id == recorded.user_message_id
    rendered = context.to_messages()
    assert rendered[0]["role"] == "system"
    assert rendered[-1] == {"role": "user", "content": "What did I just say?"}
    assert context.tokens > 0
    assert {"embed", "search", "load_session", "explicit", "total"} <= context.timings.keys()
    # another session of the same user, and another user, see none of it
    assert memory.get_context("ana", "s2", "hi").recent_messages == []
    assert memory.get_context("bob", "s1", "hi").recent_messages == []


def test_context_keeps_the_last_messages_verbatim(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(recent_messages=4)) as memory:
        for n in range(5):
            memory.record("ana", "s", f"question {n}", f"answer {n}")
        context = memory.get_context("ana", "s", "next")
        assert [m.content for m in context.recent_messages] == [
            "question 3", "answer 3", "question 4", "answer 4"]


def test_summary_folds_old_messages_in_one_transaction(store_url: str) -> None:
    settings = Settings(recent_messages=4, summary_token_threshold=40)
    with TrueMem(store_url, settings=settings) as memory:
        for n in range(6):
            memory.record("ana", "s", f"I am working on migration step {n} of the billing "
                          "database to PostgreSQL 16.", f"Noted step {n}.")
        memory.drain()
        stored = rows(memory, select(messages.c.content, messages.c.summarized)
                      .where(messages.c.user_id == "ana").order_by(messages.c.id))
        assert [r.summarized for r in stored] == [True] * 8 + [False] * 4
        context = memory.get_context("ana", "s", "Where was I?")
        assert context.summary and "migration" in context.summary
        assert len(context.recent_messages) == 4
        assert "Summary of the earlier conversation" in context.to_system_prompt()


def test_replayed_summary_job_changes_nothing(store_url: str) -> None:
    settings = Settings(recent_messages=2, summary_token_threshold=10)
    with TrueMem(store_url, settings=settings) as memory:
        for n in range(3):
            memory.record("ana", "s", f"Step {n} of the plan is done.", "Great.")
        memory.drain()
        keys = [r.key for r in rows(memory, select(jobs.c.key).where(jobs.c.kind == "summarize"))]
        before = rows(memory, select(sessions.c.summary, sessions.c.summarized_through))
        assert keys and before[0].summary  # there is a summary job to replay
        # deliver every summary job again, twice at once, after resetting it to pending
        # (no public API delivers a job: the runner is called directly, on TrueMem's loop)
        execute(memory, update(jobs).values(status="pending"))

        async def twice() -> None:
            await asyncio.gather(*(memory._core.runner.run(k) for k in keys + keys))

        memory._loop.run(twice())
        assert rows(memory, select(sessions.c.summary, sessions.c.summarized_through)) == before


def test_failing_summary_marks_nothing_and_retries(store_url: str) -> None:
    settings = Settings(recent_messages=2, summary_token_threshold=10, job_min_backoff_ms=10)
    llm = ScriptedLLM(facts_json(), RuntimeError("model overloaded"), "A short summary.")
    with TrueMem(store_url, settings=settings, llm=llm) as memory:
        memory.record("ana", "s", "First message with some words.", "Reply one.")
        memory.record("ana", "s", "Second message with more words.", "Reply two.")
        memory.drain(timeout=30)
        done = rows(memory, select(jobs.c.kind, jobs.c.status, jobs.c.attempts))
        assert all(r.status == "done" for r in done)
        assert any(r.attempts >= 1 for r in done)  # the overload was retried
        assert rows(memory, select(sessions.c.summary))[0].summary


@pytest.mark.parametrize(
    ("message", "fact"),
    [
        ("Remember that I prefer bullet points.", "bullet points"),
        ("Great, and don't forget I'm allergic to peanuts!", "peanuts"),
        ("Recuerda que soy vegetariana.", "vegetariana"),
    ],
)
def test_explicit_memory_is_stored_and_in_the_same_context(
    memory: TrueMem, message: str, fact: str
) -> None:
    context = memory.get_context("ana", "s", message)
    assert len(context.explicit) == 1
    stored = context.explicit[0]
    assert fact in stored.text
    assert (stored.importance, stored.source) == (5, "explicit")
    assert fact in context.to_system_prompt()
    assert memory.list_memories("ana") == [stored]


def test_a_standing_instruction_recorded_once_is_in_every_later_context(
    memory: TrueMem,
) -> None:
    memory.record("ana", "monday", "Always include version numbers when I ask about "
                  "software dependencies. Which HTTP client should I use?", "Try httpx.")
    memory.drain()
    [instruction] = memory.list_memories("ana")
    assert (instruction.importance, instruction.source) == (5, "explicit")
    context = memory.get_context("ana", "friday", "What should I use to parse YAML?")
    assert context.critical == [instruction]
    assert ("Asked you to always include version numbers when they ask about software "
            "dependencies") in context.to_system_prompt()


def test_no_explicit_memory_from_a_plain_question(memory: TrueMem) -> None:
    context = memory.get_context("ana", "s", "Do you remember the film we discussed?")
    assert context.explicit == [] and memory.list_memories("ana") == []


def test_rule_based_extraction_runs_after_record(memory: TrueMem) -> None:
    recorded = memory.record(
        "ana", "s", "I'm a data engineer at Acme and I live in Lisbon.", "Nice!")
    memory.drain()
    stored = memory.list_memories("ana")
    texts = " | ".join(m.text for m in stored)
    assert "Acme" in texts and "Lisbon" in texts
    assert all(m.source == "extracted" and 1 <= m.importance <= 4 for m in stored)
    assert all(m.source_message_id == recorded.user_message_id for m in stored)
    # the next question about it finds them
    context = memory.get_context("ana", "s2", "Where do I work?")
    assert any("Acme" in m.text for m in context.facts)


@pytest.mark.parametrize(
    "reply",
    [
        facts_json(("Works as a nurse", 4, "semantic"), ("Ran a marathon in May", 2, "episodic")),
        "```json\n" + facts_json(("Works as a nurse", 4, "semantic")) + "\n```",
        "Sure! Here are the facts:\n" + facts_json(("Works as a nurse", 4, "semantic")) + "\nBye",
    ],
)
def test_llm_extraction_stores_parsed_facts(store_url: str, reply: str) -> None:
    llm = ScriptedLLM(reply)
    with TrueMem(store_url, llm=llm) as memory:
        memory.record("ana", "s", "I work night shifts at the hospital as a nurse.", "Wow.")
        memory.drain()
        stored = {m.text: m for m in memory.list_memories("ana")}
        assert "Works as a nurse" in stored
        assert stored["Works as a nurse"].importance == 4
        prompt = " ".join(m["content"] for m in llm.prompts[0])
        assert "night shifts" in prompt and "JSON" in prompt


def test_malformed_llm_answers_store_nothing_and_keep_the_raw_text(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM("I'd rather not answer in JSON today.")
    with caplog.at_level(logging.WARNING), TrueMem(store_url, llm=llm) as memory:
        memory.record("ana", "s", "I work as a nurse.", "OK.")
        memory.drain()
        assert memory.list_memories("ana") == []
        assert len(llm.prompts) == 2  # one retry
        assert "rather not answer" in caplog.text
        assert {r.status for r in rows(memory, select(jobs.c.status))} == {"done"}


def test_malformed_then_valid_answer_is_retried(store_url: str) -> None:
    llm = ScriptedLLM('{"facts": [{"text": "Works as', facts_json(("Works as a nurse", 4,
                                                                    "semantic")))
    with TrueMem(store_url, llm=llm) as memory:
        memory.record("ana", "s", "I work as a nurse.", "OK.")
        memory.drain()
        assert [m.text for m in memory.list_memories("ana")] == ["Works as a nurse"]


def test_replayed_extraction_never_duplicates(store_url: str) -> None:
    llm = ScriptedLLM(facts_json(("Works as a nurse", 3, "semantic")))
    with TrueMem(store_url, llm=llm) as memory:
        recorded = memory.record("ana", "s", "I work as a nurse.", "OK.")
        memory.drain()
        key = recorded.jobs[0]
        execute(memory, update(jobs).where(jobs.c.key == key).values(status="pending"))

        # two deliveries at once; no public API delivers a job, so the runner is called
        # directly, on TrueMem's loop
        async def deliver_twice() -> None:
            await asyncio.gather(memory._core.runner.run(key), memory._core.runner.run(key))

        memory._loop.run(deliver_twice())
        stored = memory.list_memories("ana")
        assert len(stored) == 1
        assert (stored[0].importance, stored[0].reinforcements) == (3, 0)


def test_record_rejects_bad_input_and_writes_nothing(memory: TrueMem) -> None:
    for args in [("ana", "s", "", "reply"), ("ana", "s", "hi", None), (1, "s", "hi", "x"),
                 ("ana", "", "hi", "x"), ("ana", "s", "x" * 200_000, "y")]:
        with pytest.raises(InvalidInputError):
            memory.record(*args)  # type: ignore[arg-type]
    for args in [("ana", "s", ""), ("ana", None, "hi"), (None, "s", "hi")]:
        with pytest.raises(InvalidInputError):
            memory.get_context(*args)  # type: ignore[arg-type]
    assert rows(memory, select(messages.c.id)) == []
    assert rows(memory, select(jobs.c.key)) == []


async def test_async_two_calls(memory: TrueMem) -> None:
    context = await memory.aget_context("ana", "s", "Remember that I use vim.")
    assert context.explicit
    await memory.arecord("ana", "s", "Remember that I use vim.", "Noted.")
    await memory.adrain()
    again = await memory.aget_context("ana", "s2", "Which editor do I use?")
    assert any("vim" in m.text for m in again.facts)


def test_export_import_carries_sessions(memory: TrueMem) -> None:
    memory.record("ana", "s1", "Hello there", "Hi!")
    memory.drain()
    exported = memory.export_user("ana")
    assert [m["content"] for m in exported["sessions"][0]["messages"]] == ["Hello there", "Hi!"]
    memory.import_user("eva", exported)
    assert [m.content for m in memory.sessions.get("eva", "s1").recent] == ["Hello there", "Hi!"]


def test_clear_session_keeps_long_term_memory(memory: TrueMem) -> None:
    memory.get_context("ana", "s1", "Remember that I prefer tea.")
    memory.record("ana", "s1", "Remember that I prefer tea.", "Noted.")
    memory.drain()
    memory.sessions.clear("ana", "s1")
    assert memory.sessions.get("ana", "s1").recent == []
    assert any("tea" in m.text for m in memory.list_memories("ana"))


def test_a_users_sessions_are_listed_latest_first_with_their_counts(memory: TrueMem) -> None:
    """What an end user has said, conversation by conversation: to see it, then forget one."""
    march, april = datetime(2024, 3, 8, 14, 30, tzinfo=UTC), datetime(2024, 4, 2, 9, 0, tzinfo=UTC)
    memory.record_messages("ana", "trip", [("user", "Flying to Kyoto.", march),
                                           ("assistant", "Book early.", march)])
    memory.record_messages("ana", "work/2024", [("user", "Port 80 was blocked.", april)])
    memory.record("ana", "today", "Hello", "Hi!")
    memory.record("ben", "trip", "Not Ana's", "Right.")
    listed = memory.sessions.list("ana")
    assert [(i.session_id, i.messages) for i in listed] == [
        ("today", 2), ("work/2024", 1), ("trip", 2)]
    trip = listed[-1]
    assert (trip.started_at, trip.last_at, trip.summary) == (march, march, None)
    assert trip.to_dict()["started_at"] == march.isoformat()
    assert [m.content for m in memory.sessions.get("ana", "trip", recent=1).recent] == [
        "Book early."]
    memory.sessions.clear("ana", "trip")
    assert [i.session_id for i in memory.sessions.list("ana")] == ["today", "work/2024"]
    assert memory.sessions.list("eve") == []
    for bad in ({"recent": 0}, {"recent": "5"}):
        with pytest.raises(InvalidInputError, match="recent must be a positive int"):
            memory.sessions.get("ana", "today", **bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        memory.sessions.list("")


def test_admission_control_rejects_vague_facts_and_records_why(store_url: str) -> None:
    llm = ScriptedLLM(facts_json(("Likes things", 3, "semantic"),
                                 ("Works as a nurse at St Mary's hospital", 4, "semantic")))
    with TrueMem(store_url, llm=llm) as memory:
        recorded = memory.record("ana", "s", "I like things. I'm a nurse at St Mary's.", "OK.")
        memory.drain()
        assert [m.text for m in memory.list_memories("ana")] == [
            "Works as a nurse at St Mary's hospital"]
        rejected = rows(memory, select(admission_rejections))
        assert [(r.text, r.source_message_id) for r in rejected] == [
            ("Likes things", recorded.user_message_id)]
        assert rejected[0].score < rejected[0].threshold
        assert set(rejected[0].factors) == {
            "novelty", "specificity", "reliability", "consistency", "relevance"}


def test_past_turns_are_recalled_from_other_sessions(memory: TrueMem) -> None:
    memory.record("ana", "march", "The Certbot renewal failed because port 80 was blocked.",
                  "Open port 80 and run certbot renew again.")
    memory.record("ana", "march", "Thanks, that fixed it.", "Great!")
    memory.drain()
    context = memory.get_context("ana", "june", "What broke the SSL certificate renewal?")
    assert context.recalled and "certbot" in context.recalled[0].content.casefold()
    assert any("Certbot renewal failed" in t.content for t in context.recalled)
    assert context.recalled[0].session_id == "march"
    assert context.budget_spent <= memory.settings.context_token_budget
    assert "From earlier conversations" in context.to_system_prompt()
    assert "recall" in context.timings
    # the current session is never recalled (its turns are already verbatim)
    assert memory.get_context("ana", "march", "What broke the renewal?").recalled == []
    # nor is another user's
    assert memory.get_context("bob", "june", "What broke the SSL renewal?").recalled == []
