"""What ``get_context`` serves: past turns of both roles through the hybrid search,
facts and turns in one token budget, never the current window twice, never a fact
and its own source turn, never another user's words."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from db_access import execute, rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from truemem_core import InvalidInputError, Settings, TrueMem
from truemem_core.embeddings import TiktokenCounter, TokenCounter
from truemem_core.records import Context, RecalledTurn, fact_line, synthesis_line, turn_line
from truemem_core.search.recall import recall
from truemem_core.storage.schema import messages, passages

MARCH = datetime(2024, 3, 8, 14, 30, tzinfo=UTC)


def _spent(context: Context, tokens: TokenCounter) -> int:
    """Each item's line in the system prompt, with its line break."""
    return (sum(tokens.count(fact_line(hit.memory) + "\n") for hit in context.memories)
            + sum(tokens.count(turn_line(turn) + "\n") for turn in context.recalled)
            + sum(tokens.count(synthesis_line(hit.synthesis) + "\n")
                  for hit in context.syntheses))


def _history(memory: TrueMem, user: str = "ana") -> None:
    """Three past sessions; facts are extracted from the user's turns."""
    memory.record_messages(user, "trip", [
        ("user", "We are flying to Kyoto in April for the cherry blossoms.", MARCH),
        ("assistant", "Book the Philosopher's Path early; it is crowded at hanami.", MARCH),
        ("user", "Which ryokan did my sister recommend?", MARCH),
        ("assistant", "Your sister recommended the Hiiragiya ryokan near Nijo castle.", MARCH),
    ])
    memory.record_messages(user, "work", [
        ("user", "The Certbot renewal failed because port 80 was blocked.", MARCH),
        ("assistant", "Open port 80 and run certbot renew again.", MARCH),
    ])
    memory.record_messages(user, "pets", [
        ("user", "My dog Max turned seven today.", MARCH + timedelta(days=3)),
        ("assistant", "Happy birthday to Max!", MARCH + timedelta(days=3)),
    ])


def test_both_roles_are_recalled_with_date_and_speaker(memory: TrueMem) -> None:
    _history(memory)
    memory.drain()
    context = memory.get_context("ana", "new", "Which ryokan was recommended to me?")
    said = {turn.content: turn for turn in context.recalled}
    reply = said["Your sister recommended the Hiiragiya ryokan near Nijo castle."]
    assert reply.role == "assistant" and reply.session_id == "trip"
    assert reply.created_at == MARCH
    assert "- [2024-03-08] assistant: Your sister recommended the Hiiragiya" in (
        context.to_system_prompt())
    assert reply.channels and set(reply.ranks) == set(reply.channels)
    user_turn = memory.get_context("ana", "new", "When did Max have his birthday?").recalled
    assert any(t.role == "user" and "Max" in t.content for t in user_turn)


def test_turns_are_found_by_exact_words_before_their_embedding_job_runs(
    memory: TrueMem,
) -> None:
    memory.record_messages("ana", "ops", [
        ("assistant", "The vault token for staging is stored under key XK-4471-ZETA."),
    ])
    memory.drain()
    execute(memory, messages.update().values(embedding=None))  # as before its job ran
    [found] = [t for t in memory.get_context("ana", "now", "XK-4471-ZETA").recalled]
    assert found.ranks.keys() <= {"keyword", "adjacent"} and found.ranks


def test_adjacent_turns_of_a_session_are_rendered_together_in_order(memory: TrueMem) -> None:
    _history(memory)
    memory.drain()
    context = memory.get_context("ana", "new", "Kyoto cherry blossoms ryokan sister")
    prompt = context.to_system_prompt()
    lines = [line for line in prompt.splitlines()  # the recalled turns' lines
             if line.startswith("- [") and ("] user: " in line or "] assistant: " in line)]
    trip = [n for n, line in enumerate(lines) if "Kyoto" in line or "ryokan" in line
            or "Philosopher" in line]
    assert len(trip) >= 2 and trip == list(range(trip[0], trip[0] + len(trip)))
    order = [t.message_id for t in context.recalled if t.session_id == "trip"]
    in_prompt = [line for line in lines if any(
        t.content in line for t in context.recalled if t.session_id == "trip")]
    assert len(in_prompt) == len(order)
    by_id = {t.message_id: t.content for t in context.recalled}
    assert [by_id[i] for i in sorted(order)] == [line.split(": ", 1)[1] for line in in_prompt]


def test_the_current_window_is_never_recalled_but_older_turns_of_the_session_are(
    store_url: str,
) -> None:
    with TrueMem(store_url, settings=Settings(recent_messages=2)) as memory:
        memory.record("ana", "s", "My locker code at the gym is 3141.", "Noted.")
        memory.record("ana", "s", "I also like swimming.", "Nice.")
        memory.record("ana", "s", "What is my locker code?", "Let me check.")
        memory.drain()
        context = memory.get_context("ana", "s", "What is my locker code at the gym?")
        window = {m.id for m in context.recent_messages}
        assert len(window) == 2
        assert not window & {t.message_id for t in context.recalled}
        assert any("3141" in t.content for t in context.recalled)


def test_a_fact_and_its_source_turn_are_not_both_served(memory: TrueMem) -> None:
    memory.record("ana", "s1", "I am allergic to peanuts and tree nuts.", "I'll remember.")
    memory.record("ana", "s1", "I work as a nurse at St Mary's hospital.", "Good to know.")
    memory.drain()
    assert any(m.source_message_id for m in memory.list_memories("ana"))
    for question in ("What am I allergic to?", "Where do I work?", "peanuts nurse"):
        context = memory.get_context("ana", "s2", question)
        sources = {m.source_message_id for m in context.facts}
        assert not sources & {t.message_id for t in context.recalled}


def test_every_fact_of_a_turn_is_served_and_an_edited_one_stands_alone(memory: TrueMem) -> None:
    memory.record("ana", "s1", "My name is Ana. I live in Lisbon. I work as a nurse. "
                  "I am allergic to peanuts.", "Nice to meet you, Ana!")
    memory.drain()
    stored = {m.text: m for m in memory.list_memories("ana")}
    assert len({m.source_message_id for m in stored.values()}) == 1 and len(stored) == 4
    context = memory.get_context("ana", "s2", "Plan a dinner party at my place for my friends")
    assert {m.text for m in context.facts} == set(stored)  # one turn, four facts: all four
    lisbon = stored["Lives in Lisbon"]
    porto = memory.update_memory("ana", lisbon.id, text="Lives in Porto")
    assert porto.source_message_id is None  # the turn says Lisbon, not this
    context = memory.get_context("ana", "s3", "Tell me about my home in Lisbon")
    assert "Lives in Porto" in {m.text for m in context.facts}


def test_an_explicit_fact_stands_for_the_turn_that_asked_for_it(memory: TrueMem) -> None:
    asked = "Remember that I am allergic to peanuts."
    stored = memory.get_context("ana", "s1", asked).explicit  # before the message exists
    memory.record("ana", "s1", asked, "Got it, I'll remember.")
    memory.drain()
    [fact] = memory.list_memories("ana")
    assert fact.id == stored[0].id and fact.source_message_id is not None
    context = memory.get_context("ana", "s2", "What should I cook for dinner tonight?")
    assert fact.id in {m.id for m in context.critical}
    assert asked not in {t.content for t in context.recalled}  # said once, as the fact


@pytest.mark.parametrize("budget", [0, 12, 40, 150, 1500])
def test_the_budget_is_never_exceeded(store_url: str, budget: int) -> None:
    with TrueMem(store_url, settings=Settings(context_token_budget=budget)) as memory:
        _history(memory)
        for n in range(12):
            memory.add_memory("ana", f"Visited Kyoto temple number {n} with her sister")
        memory.add_memory("ana", "Kyoto notes:\n/temples/  first\n\n- the sister's ryokan")
        memory.drain()
        tokens = TiktokenCounter(memory.settings.token_encoding)
        for question in ("Kyoto sister ryokan", "Max birthday", "certbot port"):
            context = memory.get_context("ana", "new", question)
            assert context.budget_spent == _spent(context, tokens) <= budget
            # the prompt counted line by line, as its lines were packed: the same count
            assert context.tokens == sum(tokens.count(m["content"])
                                         for m in context.to_messages())
            if budget == 0:
                assert not context.memories and not context.recalled


class _Counted:
    """tiktoken, noting the length of each text it counts."""

    def __init__(self) -> None:
        self.tiktoken = TiktokenCounter()
        self.lengths: list[int] = []

    def count(self, text: str) -> int:
        self.lengths.append(len(text))
        return self.tiktoken.count(text)


def test_a_long_message_is_counted_when_recorded_not_again_in_each_context(
    store_url: str,
) -> None:
    """A pasted document is served whole in the recent window and by its passages when
    recalled; its tokens were counted when it was recorded, and a context counts only
    passages of it (a context with twenty such messages counted two million characters)."""
    counter = _Counted()
    document = " ".join(f"clause{n}" for n in range(2000))  # 20,889 characters
    with TrueMem(store_url, token_counter=counter) as memory:
        memory.record("ana", "old", f"Kyoto contract: {document}", "Filed.")
        memory.record("ana", "now", document, "Read it.")
        memory.drain(300)  # two documents of some 60 passages each to embed
        counter.lengths.clear()
        context = memory.get_context("ana", "now", "the Kyoto contract clause77")
    assert [m.content for m in context.recent_messages] == [document, "Read it."]
    recalled = [t for t in context.recalled if t.content.startswith("Kyoto contract")]
    assert recalled and recalled[0].passages[0] == 0
    assert counter.lengths and max(counter.lengths) < 10_000, max(counter.lengths)
    assert context.tokens == sum(counter.tiktoken.count(m["content"])
                                 for m in context.to_messages())


class _Where(_Counted):
    """Remembers the thread each count ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    def count(self, text: str) -> int:
        self.threads.add(threading.current_thread().name)
        return super().count(text)


def test_a_short_context_is_counted_on_the_loop_and_a_long_one_in_a_thread(
    store_url: str,
) -> None:
    """Packing a context of short texts costs less than the hop to a thread and back;
    a long message's count takes milliseconds, which would hold up every other call on
    the loop. Either way the context's count is the same as counting what it renders."""
    counter = _Where()
    long_message = " ".join(f"clause{n}" for n in range(1500))  # 14,889 characters
    with TrueMem(store_url, token_counter=counter) as memory:
        memory.record("ana", "old", "We are flying to Kyoto in April.", "Lovely.")
        memory.drain()
        contexts = {}
        for size, message in (("short", "When do we fly to Kyoto?"), ("long", long_message)):
            counter.threads.clear()
            contexts[size] = memory.get_context("ana", "now", message)
            assert contexts[size].tokens == sum(counter.tiktoken.count(m["content"])
                                                for m in contexts[size].to_messages())
            if size == "short":
                assert counter.threads == {"truemem-loop"}
            else:
                assert counter.threads and "truemem-loop" not in counter.threads
    assert contexts["short"].recalled and contexts["long"].message == long_message


def test_recall_reads_a_long_past_turn_only_as_far_as_a_context_serves_it(
    store_url: str,
) -> None:
    """A long message recorded before it had passages (or whose job has not run yet) is
    recalled whole and served as its first ``recall_turn_tokens`` tokens, so recall
    reads 32 characters a token of it and no more: a history of 100,000-character
    messages cost each context megabytes read and decoded on the loop every user shares."""
    document = " ".join(f"clause{n}" for n in range(2000))  # 20,889 characters
    said = f"Kyoto contract: {document}"
    settings = Settings(recall_turn_tokens=100)
    with TrueMem(store_url, settings=settings) as memory:
        memory.record("ana", "old", said, "Filed.")
        memory.drain(300)  # some 60 passages to embed
        execute(memory, passages.delete())  # as a message stored before migration 0020
        stored = rows(memory, select(messages.c.tokens).where(messages.c.content == said))

        async def recalled() -> list[RecalledTurn]:
            async with memory._core.db.autocommit() as conn:
                return await recall(conn, memory._core.memories.deps.channels, "ana", "now",
                                    "the Kyoto contract clause77",
                                    memory._core.embedder.embed(["the Kyoto contract"])[0],
                                    settings)

        turns = {turn.content[:14]: turn for turn in memory._loop.run(recalled())}
        context = memory.get_context("ana", "now", "the Kyoto contract clause77")
    head = turns["Kyoto contract"]
    assert head.content == said[:3200]  # 32 characters a token
    assert head.tokens == stored[0].tokens > 100  # the whole message's count
    assert turns["Filed."].content == "Filed."
    served = next(t for t in context.recalled if t.message_id == head.message_id)
    assert served.content.endswith(" …") and 90 <= served.tokens <= 100
    assert said.startswith(served.content.removesuffix(" …"))


def test_critical_memories_come_on_top_of_the_budget(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(context_token_budget=0)) as memory:
        allergy = memory.add_memory("ana", "Allergic to peanuts and tree nuts", importance=5)
        context = memory.get_context("ana", "s", "What food can't I eat?")
        assert [m.id for m in context.facts] == [allergy.id]
        assert context.budget_spent == 0


def test_every_message_is_embedded_whatever_its_role(memory: TrueMem, store_url: str) -> None:
    memory.record_messages("ana", "s", [
        ("assistant", "Welcome back!"), ("assistant", "Shall we plan the trip?"),
        ("system", "The user is on the mobile app."), ("user", "Yes, Kyoto."),
        ("assistant", "Great choice."), ("assistant", "Spring or autumn?"),
    ])
    memory.drain()
    embedded = rows(memory, select(messages.c.role, messages.c.embedding))
    assert len(embedded) == 6 and all(r.embedding is not None for r in embedded)


def test_imported_messages_are_recallable_at_once(memory: TrueMem) -> None:
    memory.record("ana", "old", "Our wedding venue is the Lisbon greenhouse.", "Lovely.")
    exported = memory.export_user("ana")
    memory.import_user("bea", exported)  # no drain: import embeds what it writes
    with_vectors = rows(memory, select(messages.c.embedding).where(messages.c.user_id == "bea"))
    assert with_vectors and all(r.embedding is not None for r in with_vectors)
    recalled = memory.get_context("bea", "new", "Where is the wedding venue?").recalled
    assert any("greenhouse" in t.content for t in recalled)


def test_said_at_dates_a_message_and_is_validated(memory: TrueMem) -> None:
    [said] = memory.record_messages("ana", "s", [("user", "Hello", MARCH)])
    assert memory.sessions.get("ana", "s").recent[0].created_at == MARCH
    for bad in ([("user", "Hi", datetime(2024, 3, 8))], [("user", "Hi", "2024-03-08")],
                [("user", "Hi", MARCH, "extra")]):
        with pytest.raises(InvalidInputError):
            memory.record_messages("ana", "t", bad)  # type: ignore[arg-type]
    assert [m.id for m in memory.sessions.get("ana", "s").recent] == [said]
    assert memory.sessions.get("ana", "t").recent == []


def test_a_turn_with_nothing_visible_is_skipped_and_the_others_are_kept(
        memory: TrueMem) -> None:
    """What a tool-calling model's replies look like, and what LongMemEval's haystacks
    hold: empty and invisible-only turns. They are skipped (None), the rest recorded."""
    ids = memory.record_messages("ana", "s", [
        ("user", "What's the weather in Lisbon?"), ("assistant", ""),
        ("assistant", "\u200b\u2060 \ufeff"), ("user", "I moved to Lisbon last year."),
        ("assistant", "Sunny, 24 degrees.")])
    assert [i is None for i in ids] == [False, True, True, False, False]
    recent = memory.sessions.get("ana", "s").recent
    assert [(m.id, m.role, m.content) for m in recent] == [
        (ids[0], "user", "What's the weather in Lisbon?"),
        (ids[3], "user", "I moved to Lisbon last year."),
        (ids[4], "assistant", "Sunny, 24 degrees.")]
    assert memory.record_messages("ana", "t", [("assistant", "  ")]) == [None]
    assert memory.sessions.get("ana", "t").recent == []
    # an exchange whose reply is blank keeps the user's message
    recorded = memory.record("ana", "u", "I have a cat named Miso.", "\u200b")
    assert recorded.assistant_message_id is None
    assert [m.content for m in memory.sessions.get("ana", "u").recent] == [
        "I have a cat named Miso."]
    memory.drain()
    assert any("Miso" in m.text for m in memory.list_memories("ana"))
    # a NUL or a lone surrogate is still bad input, and nothing of the list is written
    for bad in ["\x00", "\ud800", "ok \x00"]:
        with pytest.raises(InvalidInputError, match=r"NUL|surrogate|visible"):
            memory.record_messages("ana", "v", [("user", "Hello"), ("assistant", bad)])
    assert memory.sessions.get("ana", "v").recent == []
    with pytest.raises(InvalidInputError, match="no visible character"):
        memory.record("ana", "v", "\u200b", "Hello!")  # the user's message must say something


WORDS = ["kyoto", "sister", "certbot", "locker", "wedding", "peanuts", "guitar", "tea"]


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(said=st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3"]),
                               st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)),
                     min_size=1, max_size=8),
       asker=st.sampled_from(["u1", "u2", "u3"]), query=st.sampled_from(WORDS))
def test_no_other_users_words_are_ever_recalled(
    memory: TrueMem, said: list[tuple[str, list[str]]], asker: str, query: str
) -> None:
    for user in ("u1", "u2", "u3"):
        memory.erase_user(user)
    for n, (user, words) in enumerate(said):
        memory.record_messages(user, f"s{n}", [("user", f"{user} says {' '.join(words)}")])
    memory.drain()
    context = memory.get_context(asker, "now", query)
    assert all(t.content.startswith(f"{asker} says") for t in context.recalled)
    mine = {f"{u} says {' '.join(w)}" for u, w in said if u == asker}
    assert {t.content for t in context.recalled} <= mine


def test_a_question_about_the_user_ranks_their_own_turns_above_the_assistants(
    store_url: str,
) -> None:
    """The assistant's long replies match every topic; a first-person question's evidence
    is what the user said, so the assistant's turns weigh ``weight_other_speaker``."""
    asked = "What did I do about the boiler pressure valve?"
    reply = ("Good job! A boiler pressure relief valve should be tested yearly: lift the "
             "boiler pressure valve lever and watch the boiler pressure gauge.")
    alone = Settings(weight_hop=0.0)  # the first search's scores, without the second hop's
    with TrueMem(store_url, settings=alone.replace(weight_other_speaker=1.0)) as even:
        even.record_messages("ana", "home", [
            ("user", "Last weekend I replaced the valve on the old heater myself.", MARCH),
            ("assistant", reply, MARCH),
            ("user", "My sister Ana lives in Porto.", MARCH),
            ("assistant", "Porto is lovely in spring.", MARCH),
        ])
        even.drain()
        before = even.get_context("ana", "new", asked)
        neutral_before = even.get_context("ana", "new", "How is a boiler pressure valve tested?")
    with TrueMem(store_url, settings=alone) as memory:
        after = memory.get_context("ana", "new", asked)
        neutral_after = memory.get_context("ana", "new", "How is a boiler pressure valve tested?")
    assert before.recalled[0].role == "assistant"
    assert after.recalled[0].role == "user"
    [reply_before] = [t for t in before.recalled if t.content == reply]
    [reply_after] = [t for t in after.recalled if t.content == reply]
    assert reply_after.score == pytest.approx(reply_before.score * 0.5)
    # a question about something else keeps every turn's fused score
    assert ([(t.message_id, t.score) for t in neutral_after.recalled]
            == [(t.message_id, t.score) for t in neutral_before.recalled])
