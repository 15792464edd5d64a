"""Long messages are searched and served by their passages: the passage that answers,
with its message's id, role and date, within the budget; passages go with their
message (session cleared, user erased), are re-embedded with it, rebuilt by an import,
and never reach another user."""

from __future__ import annotations

from datetime import UTC, datetime

import db_access
import numpy as np
import pytest
from recording_embedder import RecordingEmbedder
from sqlalchemy import func, select, table
from test_cli import TinyEmbedder

from truemem_core import InvalidInputError, Settings, TrueMem
from truemem_core.conversation.passages import cut
from truemem_core.embeddings import TiktokenCounter
from truemem_core.records import turn_line
from truemem_core.storage.schema import messages, passages

MAY = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)
TOPICS = ["the load balancer", "the message queue", "the nightly backups", "the CDN cache",
          "the logging pipeline", "the build agents", "the DNS records", "the TLS certificates",
          "the metrics dashboards", "the cron scheduler", "the object storage", "the firewall"]
NEEDLE = ("The staging database password rotates every 45 days and is kept in the Vault "
          "path secret/staging/postgres.")


def essay(needle: str = NEEDLE, before: int = 30, after: int = 6) -> str:
    """An assistant's long answer (about 4,800 characters) with ``needle`` past its
    3,500th character."""
    def paragraph(n: int) -> str:
        topic = TOPICS[n % len(TOPICS)]
        return (f"Step {n}: review {topic} once a week. Check that {topic} reports healthy "
                f"status and note any warnings in the runbook.")
    parts = [paragraph(n) for n in range(before)] + [needle]
    parts += [paragraph(n) for n in range(before, before + after)]
    return "\n\n".join(parts)


SHORT_ESSAY = essay(before=8, after=2)  # four passages


def _passages(store: TrueMem | str, user: str | None = None) -> int:
    query = select(func.count()).select_from(passages)
    if user is not None:
        query = query.where(passages.c.user_id == user)
    return int(db_access.rows(store, query)[0][0])


def test_the_passage_that_answers_is_served_with_its_messages_date_and_role(
    store_url: str,
) -> None:
    """Nineteen passages, a budget for two: the one that answers is served (it was past
    the head a context served of a long message, and past what its search read)."""
    long = essay()
    assert long.index(NEEDLE) > 3500
    settings = Settings(context_token_budget=160)
    with TrueMem(store_url, settings=settings) as memory:
        ids = memory.record_messages("ana", "ops", [
            ("user", "How should I look after our infrastructure?", MAY),
            ("assistant", long, MAY)])
        memory.drain()
        assert _passages(memory, "ana") > 10
        context = memory.get_context("ana", "today",
                                     "Where is the staging database password kept?")
    assert context.recalled, context
    turn = context.recalled[0]  # the best hit
    assert "secret/staging/postgres" in turn.content
    assert (turn.message_id, turn.role, turn.created_at) == (ids[1], "assistant", MAY)
    # passages (their places in the message): the message's own words
    assert turn.passages and all(piece in long for piece in
                                 turn.content.removeprefix("… ").split(" … "))
    assert turn.to_dict()["passages"] == turn.passages
    assert context.budget_spent <= 160
    assert f"- [2024-05-02] assistant: {turn.content}" in context.to_system_prompt()
    # a message is served whole or by passages, never both
    assert len({t.message_id for t in context.recalled}) == len(context.recalled)


def test_passages_are_spent_once_within_the_budget(store_url: str) -> None:
    """Every passage of a message matches a question about its topic: the budget serves
    them as one turn in the message's order, and spends no more than it allows."""
    settings = Settings(context_token_budget=300)
    tokens = TiktokenCounter()
    with TrueMem(store_url, settings=settings) as memory:
        ids = memory.record_messages("ana", "ops", [
            ("user", "How should I look after our infrastructure?", MAY),
            ("assistant", essay(), MAY)])
        memory.drain()
        context = memory.get_context("ana", "today", "How often should I review the backups?")
    mine = [t for t in context.recalled if t.message_id == ids[1]]
    assert len(mine) == 1 and len(mine[0].passages) >= 2, mine
    assert list(mine[0].passages) == sorted(mine[0].passages)
    spent = sum(tokens.count(turn_line(t) + "\n") for t in context.recalled)
    assert spent <= context.budget_spent <= 300


def test_a_long_message_is_cut_at_sentences_and_covers_the_message() -> None:
    text = essay()
    parts = cut(text, TiktokenCounter().count(text), 100)
    assert [p.ordinal for p in parts] == list(range(len(parts)))
    for part in parts:
        assert text[part.start:part.start + len(part.content)] == part.content
        assert part.content.endswith((".", "postgres.")) and part.tokens <= 110
    rebuilt = "".join(ch for ch in text if not ch.isspace())
    assert "".join(p.content for p in parts).replace(" ", "").replace("\n", "") == rebuilt
    one_sentence = "word " * 400  # no break at all: cut at words
    assert all(p.tokens <= 100 and not p.content.startswith(" ")
               for p in cut(one_sentence, 400, 100))


def test_passages_go_with_their_session_and_their_user(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        for user in ("ana", "ben"):
            memory.record_messages(user, "ops", [("user", "Infra tips?", MAY),
                                                 ("assistant", SHORT_ESSAY, MAY)])
            memory.record_messages(user, "later", [("user", "More?", MAY),
                                                   ("assistant", essay(before=9), MAY)])
        memory.drain()
        assert _passages(store_url, "ana") > 5 and _passages(store_url, "ben") > 5
        memory.sessions.clear("ana", "ops")
        left = db_access.rows(store_url, select(passages.c.session_id).where(
            passages.c.user_id == "ana").distinct())
        assert [row.session_id for row in left] == ["later"]
        memory.erase_user("ben")
        assert _passages(store_url, "ben") == 0
        context = memory.get_context("ben", "s", "Where is the staging database password kept?")
        assert context.recalled == []
    assert _passages(store_url) == _passages(store_url, "ana")
    if store_url.startswith("sqlite"):  # the words' index forgets them too
        indexed = db_access.rows(store_url, select(func.count()).select_from(
            table("passages_fts_ids")))
        assert indexed[0][0] == _passages(store_url)


def test_one_user_never_sees_anothers_passages(memory: TrueMem) -> None:
    ana = memory.record_messages("ana", "ops", [("user", "Infra tips?", MAY),
                                                ("assistant", SHORT_ESSAY, MAY)])
    memory.record_messages("ben", "ops", [("user", "Hello", MAY), ("assistant", "Hi!", MAY)])
    memory.drain()
    context = memory.get_context("ben", "now", "Where is the staging database password kept?")
    assert all(t.message_id not in ana for t in context.recalled)
    assert "secret/staging" not in context.to_system_prompt()


def test_reembedding_recomputes_passages_with_the_new_model(tmp_url: str) -> None:
    with TrueMem(tmp_url, embedder=TinyEmbedder()) as memory:
        memory.record_messages("ana", "ops", [("user", "Infra tips?", MAY),
                                              ("assistant", SHORT_ESSAY, MAY)])
        memory.drain()
    models = select(passages.c.embedding_model).distinct()
    assert [row[0] for row in db_access.rows(tmp_url, models)] == ["tiny-test-embedder"]
    with TrueMem(tmp_url) as memory:
        memory.admin.reembed()
        assert [row[0] for row in db_access.rows(tmp_url, models)] == ["all-MiniLM-L6-v2"]
        context = memory.get_context("ana", "now", "Where is the staging database password kept?")
    assert "secret/staging/postgres" in context.recalled[0].content


def test_an_import_rebuilds_passages_it_does_not_carry_them(memory: TrueMem) -> None:
    memory.record_messages("ana", "ops", [("user", "Infra tips?", MAY),
                                          ("assistant", SHORT_ESSAY, MAY)])
    memory.drain()
    exported = memory.export_user("ana")
    assert "passages" not in exported
    assert all("passages" not in m for s in exported["sessions"] for m in s["messages"])
    memory.import_user("cy", exported)
    assert _passages(memory, "cy") == _passages(memory, "ana") > 2
    said = db_access.rows(memory, select(messages.c.id).where(
        messages.c.user_id == "cy", messages.c.role == "assistant"))
    context = memory.get_context("cy", "now", "Where is the staging database password kept?")
    assert context.recalled[0].message_id == said[0].id
    assert "secret/staging/postgres" in context.recalled[0].content


def test_a_long_turn_and_its_passages_are_embedded_in_one_call(store_url: str) -> None:
    """The job embeds the user's turn and the reply's passages in one batch; the reply's
    own vector is the mean of its passages' (no second pass over its head)."""
    embedder = RecordingEmbedder()
    with TrueMem(store_url, embedder=embedder) as memory:
        ids = memory.record_messages("ana", "ops", [("user", "Infra tips?", MAY),
                                                    ("assistant", SHORT_ESSAY, MAY)])
        memory.drain()
    stored = db_access.rows(store_url, select(passages.c.content, passages.c.embedding)
                            .where(passages.c.message_id == ids[1]).order_by(passages.c.ordinal))
    assert ["Infra tips?", *(row.content for row in stored)] in embedder.calls
    assert not any(SHORT_ESSAY in call for call in embedder.calls)
    vectors = np.asarray([np.asarray(row.embedding, dtype=np.float32) for row in stored])
    mean = vectors.mean(axis=0)
    reply = db_access.rows(store_url, select(messages.c.embedding).where(
        messages.c.id == ids[1]))[0].embedding
    assert np.allclose(np.asarray(reply, dtype=np.float32), mean / np.linalg.norm(mean),
                       atol=1e-5)


def test_passages_can_be_turned_off_and_a_bad_size_is_refused(store_url: str) -> None:
    """``passage_tokens=0``: long messages are not cut, and are recalled by their head,
    which costs the drain no more embedding than their first 256 tokens."""
    with pytest.raises(InvalidInputError, match="passage_tokens"):
        Settings(passage_tokens=-1)
    with TrueMem(store_url, settings=Settings(passage_tokens=0)) as memory:
        ids = memory.record_messages("ana", "ops", [("user", "Infra tips?", MAY),
                                                    ("assistant", SHORT_ESSAY, MAY)])
        memory.drain()
        context = memory.get_context("ana", "now", "How often should I review the backups?")
    assert _passages(store_url) == 0
    [reply] = [t for t in context.recalled if t.message_id == ids[1]]
    assert reply.passages == () and SHORT_ESSAY.startswith(reply.content.removesuffix(" …"))
