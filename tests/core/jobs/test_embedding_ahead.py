"""A drain embeds many messages in one model call: an extraction embeds its own turns
and the session's next messages still without a vector (``jobs.handlers``), whose own
jobs then find them done; each message is embedded once, with the vector it would get
alone, and its passages (docs/operations.md, "What runs per message")."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import numpy as np
import services
from db_access import rows
from recording_embedder import RecordingEmbedder
from scripted_llm import ScriptedLLM
from sqlalchemy import func, select
from test_jobs_redis import queue_url  # noqa: F401  (a fixture)

from truemem_core import Settings, TrueMem
from truemem_core.embeddings import default_embedder
from truemem_core.jobs.handlers import AHEAD_MESSAGES
from truemem_core.storage.schema import jobs, messages, passages

MAY = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)
TOPICS = ["the load balancer", "the message queue", "the nightly backups", "the CDN cache",
          "the logging pipeline", "the build agents", "the DNS records", "the firewall"]


def essay(n: int) -> str:
    """An assistant's long answer (six passages or so), different for each ``n``."""
    return "\n\n".join(
        f"Step {n}.{k}: review {TOPICS[(n + k) % len(TOPICS)]} every {k + 2} days and note "
        f"any warnings about it in runbook page {n * 10 + k}, then tell the on-call team."
        for k in range(12))


def exchanges(count: int, long_every: int = 0) -> list[tuple[str, str, datetime]]:
    """``count`` exchanges; every ``long_every``-th reply an essay (0: none)."""
    return [turn for n in range(count) for turn in (
        ("user", f"What should I check for service number {n}?", MAY),
        ("assistant", essay(n) if long_every and n % long_every == 0 else f"Check {n}.", MAY))]


def _stored(url: str, user: str) -> tuple[dict[int, Any], dict[int, list[Any]]]:
    """Each message's vector, and each long message's passages (content, vector)."""
    vectors = {row.id: row.embedding for row in rows(url, select(
        messages.c.id, messages.c.embedding).where(messages.c.user_id == user))}
    cut: dict[int, list[Any]] = {}
    for row in rows(url, select(passages.c.message_id, passages.c.content, passages.c.embedding)
                    .where(passages.c.user_id == user).order_by(passages.c.ordinal)):
        cut.setdefault(row.message_id, []).append((row.content, row.embedding))
    return vectors, cut


def test_a_recorded_session_is_embedded_in_one_call_each_message_once(store_url: str) -> None:
    """Twelve exchanges recorded at once (a bulk import): one call embeds all 24 turns and
    the essays' passages, not one call an exchange (twelve before); each text once, each
    message with the vector it gets alone (a long one: its passages')."""
    embedder = RecordingEmbedder()
    turns = exchanges(12, long_every=4)
    with TrueMem(store_url, embedder=embedder) as memory:
        ids = memory.record_messages("ana", "import", turns)
        memory.drain(timeout=300)
    turn_calls = embedder.with_any(c for _, c, _ in turns)
    assert len(turn_calls) == 1, [len(call) for call in turn_calls]
    vectors, cut = _stored(store_url, "ana")
    assert sorted(cut) == [ids[1], ids[9], ids[17]]  # the essays, cut into passages
    embedded = [text for call in turn_calls for text in call]
    short = [content for (_, content, _), i in zip(turns, ids, strict=True) if i not in cut]
    parts = [content for mine in cut.values() for content, _ in mine]
    assert sorted(embedded) == sorted(short + parts)  # each once
    model = default_embedder()
    for (_, content, _), i in zip(turns, ids, strict=True):
        if i in cut:
            mean = np.mean([np.asarray(v, np.float32) for _, v in cut[i]], axis=0)
            expected = mean / np.linalg.norm(mean)
            for text, vector in cut[i]:
                assert np.allclose(np.asarray(vector, np.float32), model.embed([text])[0],
                                   atol=1e-5)
        else:
            expected = model.embed([content])[0]
        assert np.allclose(np.asarray(vectors[i], np.float32), expected, atol=1e-5), content


def test_an_extraction_reads_a_bounded_window_ahead(store_url: str) -> None:
    """Fifty short exchanges: an extraction embeds at most ``AHEAD_MESSAGES`` messages
    (what it reads ahead does not grow with the session), every message is embedded
    once, and every job is done."""
    embedder = RecordingEmbedder()
    turns = exchanges(50)
    with TrueMem(store_url, embedder=embedder) as memory:
        memory.record_messages("ana", "import", turns)
        memory.drain(timeout=300)
        left = rows(memory, select(jobs.c.key).where(jobs.c.status != "done"))
    turn_calls = embedder.with_any(c for _, c, _ in turns)
    assert max(len(call) for call in turn_calls) == AHEAD_MESSAGES
    assert len(turn_calls) == -(-len(turns) // AHEAD_MESSAGES)  # 100 turns: 4 calls
    assert sorted(t for call in turn_calls for t in call) == sorted(c for _, c, _ in turns)
    vectors, _ = _stored(store_url, "ana")
    assert len(vectors) == len(turns) and all(v is not None for v in vectors.values())
    assert left == []


def test_an_extraction_leaves_the_stretch_to_an_earlier_one_still_embedding_it(
    store_url: str,
) -> None:
    """While a user message shortly before has no vector (its job is running on another
    thread or worker, or failed), the jobs after it embed their own turns only: not the
    same window again, one job each (the first job here fails after embedding)."""
    embedder = RecordingEmbedder()
    llm = ScriptedLLM(RuntimeError("the LLM is down"), json.dumps({"facts": []}))
    turns = exchanges(4)
    with TrueMem(store_url, embedder=embedder, llm=llm,
                 settings=Settings(job_max_retries=0)) as memory:
        memory.record_messages("ana", "import", turns)
        memory.drain(timeout=120)
    texts = [content for _, content, _ in turns]
    assert embedder.with_any(texts) == [texts, texts[2:4], texts[4:6], texts[6:8]]


def test_a_live_exchange_is_embedded_by_its_own_job(store_url: str) -> None:
    """Recorded one exchange at a time, each job embeds its own two turns: nothing to
    read ahead, and an earlier session's messages are not touched again."""
    embedder = RecordingEmbedder()
    with TrueMem(store_url, embedder=embedder) as memory:
        for n in range(3):
            memory.record("ana", "chat", f"What should I check for service number {n}?",
                          f"Check {n}.")
            memory.drain(timeout=120)
    assert embedder.with_any(f"Check {n}." for n in range(3)) == [
        [f"What should I check for service number {n}?", f"Check {n}."] for n in range(3)]


def test_workers_on_redis_embed_every_message_and_passage_once(
    store_url: str, queue_url: str,  # noqa: F811
) -> None:
    """Two worker threads run the extractions of one import at once: each message gets
    its vector and each essay its passages once, whichever job embedded them."""
    turns = exchanges(40, long_every=5)
    with TrueMem(store_url, redis_url=queue_url) as memory, services.worker_process(
            store_url, queue_url, threads=2):
        ids = memory.record_messages("ana", "import", turns)
        memory.drain(timeout=600)
        left = rows(memory, select(jobs.c.key).where(jobs.c.status != "done"))
        counted = rows(memory, select(passages.c.message_id, passages.c.ordinal, func.count())
                       .group_by(passages.c.message_id, passages.c.ordinal))
    assert left == []
    vectors, cut = _stored(store_url, "ana")
    assert all(vectors[i] is not None for i in ids)
    assert sorted(cut) == [ids[2 * n + 1] for n in range(0, 40, 5)]
    assert {n for *_, n in counted} == {1}


def test_an_llm_is_shown_the_nearest_facts_for_a_message_embedded_ahead(
    store_url: str,
) -> None:
    """With an LLM, an extraction shows it the user's stored facts nearest the message:
    for a message an earlier job embedded, found by its stored vector."""
    llm = ScriptedLLM(json.dumps({"facts": []}))
    said = ["I'm thinking about where I'd like to live.", "My cat has been sneezing a lot."]
    with TrueMem(store_url, llm=llm) as memory:
        for text in ("Lives in Madrid", "Has a cat named Miso", "Employed by Initech"):
            memory.add_memory("ana", text)
        memory.record_messages("ana", "import", [
            turn for text in said for turn in (("user", text, MAY), ("assistant", "Noted.", MAY))])
        memory.drain(timeout=120)
    shown = {text: re.findall(r"^- m\d+: (.*)$", prompt[1]["content"], re.MULTILINE)
             for prompt in llm.prompts for text in said if text in prompt[1]["content"]}
    assert shown[said[0]][0] == "Lives in Madrid"
    assert shown[said[1]][0] == "Has a cat named Miso"  # embedded by the first job
