"""A long message is read where it cannot hold up other users: its text rules run in a
helper process (pure Python in a thread holds the GIL that every other call needs), and
the embedder tokenizes only the head of it that can reach the model.

Behaviour, not timing: the same answers as reading in place, the rules' inner functions
never called in this process for a long text, the tokenizer never handed the whole of it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from truemem_core import Settings, TrueMem
from truemem_core.embeddings import default_embedder
from truemem_core.language import (
    detect_explicit,
    extract_labelled,
    offload,
    rule_extractor,
    summarize,
    summarize_extractive,
    triggers,
)

LIMIT = 100_000  # Settings().max_message_chars
HOSTILE = ("remember that " * 7200)[:LIMIT]
PASTED = (
    "Remember that my sister is called Zoe. "
    + "I live in Porto and I work as a nurse. The report follows below. " * 120
    + "Please remember I'm allergic to peanuts."
)
LONG = [HOSTILE, PASTED, PASTED * 8, "Note that I am vegan. " * 1000]


@pytest.fixture
def in_process_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Names of the rules' inner functions called in this process (any thread)."""
    calls: list[str] = []

    def spy(module: Any, name: str) -> None:
        real: Callable[..., Any] = getattr(module, name)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, recorded)

    spy(triggers, "_hits")  # explicit requests
    spy(rule_extractor, "_clauses")  # rule-based facts
    spy(summarize, "score")  # the extractive summary
    yield calls


def read_here(text: str) -> list[Any]:
    """What ``detect_explicit`` answers, worked out in this thread."""
    if len(text) <= 2 * triggers.EDGE_CHARS:
        return triggers._detect(text)
    return triggers._detect_edges(text[: triggers.EDGE_CHARS], text[-triggers.EDGE_CHARS :])


def test_a_long_text_is_read_in_the_helper_with_the_answer_of_reading_it_here(
    in_process_calls: list[str],
) -> None:
    for text in LONG:
        assert detect_explicit(text) == read_here(text)
        assert extract_labelled(text) == rule_extractor._extract_labelled(text)
        turns = [("user", text), ("assistant", "Noted, thanks.")]
        assert summarize_extractive("User: I live in Porto.", turns) == summarize._summarize(
            "User: I live in Porto.", turns, 12)
    helper = offload.helper_pid()
    assert helper is not None and helper != os.getpid()
    # the comparisons above ran the rules here too; the public calls did not
    in_process_calls.clear()
    for text in LONG:
        detect_explicit(text)
        extract_labelled(text)
        summarize_extractive(None, [("user", text)])
    assert in_process_calls == []


def test_a_short_text_is_read_in_the_callers_thread(in_process_calls: list[str]) -> None:
    said = "Remember that my sister is called Zoe. I live in Porto."
    assert len(said) <= offload.OFFLOAD_CHARS
    assert [f.text for f in detect_explicit(said)] == ["User's sister is called Zoe"]
    assert extract_labelled(said)
    assert {"_hits", "_clauses"} <= set(in_process_calls)


def test_get_context_and_record_of_a_long_message_run_no_rule_in_this_process(
    store_url: str, in_process_calls: list[str]
) -> None:
    long = PASTED * 8
    expected = [f.text for f in read_here(long)]
    assert len(expected) == 2
    in_process_calls.clear()
    with TrueMem(store_url, settings=Settings(recent_messages=2)) as memory:
        context = memory.get_context("mallory", "s", long)
        assert [m.text for m in context.explicit] == expected
        memory.get_context("mallory", "s", HOSTILE)
        for _ in range(2):  # then the first exchange is older than the recent two messages
            memory.record("mallory", "s", long, "Noted.")
        memory.drain(timeout=120)
        assert memory.sessions.get("mallory", "s").summary  # the summary job ran
        texts = {m.text for m in memory.list_memories("mallory")}
    assert {"User's sister is called Zoe", "Is allergic to peanuts"} <= texts
    assert in_process_calls == []


def test_without_a_helper_the_text_is_read_in_place(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    offload.shutdown()
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    monkeypatch.setattr(offload._helper, "_failed_at", -offload.RETRY_AFTER_S)
    with caplog.at_level(logging.WARNING, logger="truemem.language"):
        facts = detect_explicit(PASTED)
        assert detect_explicit(PASTED) == facts  # no second attempt, no second warning
    assert [f.text for f in facts] == ["User's sister is called Zoe", "Is allergic to peanuts"]
    assert offload.helper_pid() is None
    assert len([r for r in caplog.records if "could not start" in r.getMessage()]) == 1


def test_a_helper_that_died_is_replaced_and_no_answer_is_lost() -> None:
    expected = triggers._detect(PASTED)
    assert detect_explicit(PASTED) == expected
    dead = offload.helper_pid()
    assert dead is not None
    os.kill(dead, signal.SIGKILL)
    assert detect_explicit(PASTED) == expected  # read in place while the helper is gone
    assert detect_explicit(PASTED) == expected  # a new helper
    assert offload.helper_pid() not in (None, dead)


def test_the_last_store_to_close_ends_the_helper() -> None:
    offload.hold()
    offload.hold()
    detect_explicit(PASTED)
    helper = offload.helper_pid()
    assert helper is not None
    offload.release()
    assert offload.helper_pid() == helper  # one store still open
    offload.release()
    assert offload.helper_pid() is None
    assert detect_explicit(PASTED)  # the next long text starts a new one
    assert offload.helper_pid() not in (None, helper)


def test_a_forked_child_starts_its_own_helper() -> None:
    script = textwrap.dedent(f"""
        import os
        from truemem_core.language import detect_explicit, offload
        text = {PASTED!r}
        first = detect_explicit(text)
        parent_helper = offload.helper_pid()
        child = os.fork()
        if child == 0:
            ok = detect_explicit(text) == first and offload.helper_pid() not in (
                None, parent_helper)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the child's answer or helper"
        assert detect_explicit(text) == first and offload.helper_pid() == parent_helper
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_embedder_tokenizes_the_head_of_a_long_text_and_gets_the_same_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = default_embedder()
    embedder.embed(["load the model"])
    tokenizer = embedder._tokenizer
    texts = [HOSTILE, PASTED * 8, "Ärger über Café naïve 東京 " * 4000, "x" * 150 + " tail"]
    whole = [e.ids for e in tokenizer.encode_batch(texts)]
    read: list[int] = []

    class Counting:
        def encode_batch(self, batch: list[str]) -> Any:
            read.extend(len(text) for text in batch)
            return tokenizer.encode_batch(batch)

    monkeypatch.setattr(embedder, "_tokenizer", Counting())
    assert [e.ids for e in embedder._encode(texts)] == whole
    assert max(read[:3]) < 5_000  # the long texts: their heads only
    vectors = embedder.embed([HOSTILE])
    monkeypatch.undo()
    assert vectors.shape == (1, embedder.dimension)


def test_closing_the_last_store_ends_the_helper(store_url: str) -> None:
    offload.shutdown()
    with TrueMem(store_url) as first:
        with TrueMem(store_url) as second:
            second.get_context("mallory", "s", PASTED * 8)
            helper = offload.helper_pid()
            assert helper is not None
        assert offload.helper_pid() == helper  # ``first`` is still open
        first.list_memories("mallory")
    assert offload.helper_pid() is None


def priority(thread_or_process: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, thread_or_process)


def test_the_helper_runs_below_the_callers_priority() -> None:
    detect_explicit(PASTED)
    helper = offload.helper_pid()
    assert helper is not None
    assert priority(helper) > priority(0)


def test_embeddings_run_below_the_priority_of_the_loop_that_serves_calls(
    store_url: str,
) -> None:
    embedder = default_embedder()
    seen: list[tuple[str, int]] = []

    class Watching:
        model_name, dimension = embedder.model_name, embedder.dimension

        def embed(self, texts: Any) -> Any:
            seen.append((threading.current_thread().name,
                         priority(threading.get_native_id())))
            return embedder.embed(texts)

    with TrueMem(store_url, embedder=Watching()) as memory:
        memory.add_memory("ana", "Ana is allergic to peanuts")
        memory.get_context("ana", "s", "what am I allergic to?")
    # the loop's thread was started from this one, at this one's priority
    assert seen and all(name.startswith("truemem-embed") for name, _ in seen)
    assert all(nice > priority(0) for _, nice in seen)
