"""The dispatcher's sender thread: keys in order, failures reported, outages paused."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from truemem_core.jobs import dispatcher


def run(send_results: dict[str, object], batches: list[list[str]]) -> tuple[
        list[str], list[tuple[list[str], list[str]]]]:
    """Put ``batches`` to a sender whose broker answers ``send_results[key]`` (an
    exception is raised); the keys it tried, and its reports."""
    tried: list[str] = []
    reports: list[tuple[list[str], list[str]]] = []

    def send(key: str) -> bool:
        tried.append(key)
        answer = send_results.get(key, True)
        if isinstance(answer, Exception):
            raise answer
        return bool(answer)

    sender = dispatcher._Sender(send, lambda keys, failed: reports.append((keys, failed)))
    for batch in batches:
        sender.put(batch)
    sender.stop(timeout=10)
    return tried, reports


def test_keys_are_sent_in_order_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatcher, "PAUSE_AFTER_FAILURE_S", 0.0)
    tried, reports = run({"b": False}, [["a", "b"], ["c"]])
    assert tried == ["a", "b", "c"]
    assert reports == [(["a", "b"], ["b"]), (["c"], [])]


def test_a_send_that_raises_does_not_end_the_sender(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatcher, "PAUSE_AFTER_FAILURE_S", 0.0)
    tried, reports = run({"bad": RuntimeError("a bug")}, [["bad"], ["next"]])
    assert tried == ["bad", "next"]
    assert reports == [(["bad"], ["bad"]), (["next"], [])]


def test_after_a_failure_the_keys_that_follow_are_not_tried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatcher, "PAUSE_AFTER_FAILURE_S", 60.0)
    tried, reports = run({"a": False}, [["a", "b"], ["c"]])
    assert tried == ["a"]  # the broker is down: one failed connect, not one per job
    assert reports == [(["a", "b"], ["a", "b"]), (["c"], ["c"])]


def test_the_pause_ends_however_many_keys_it_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    # a clock that moves 0.4 s each time the sender reads it; a pause of 1 s
    ticks = itertools.count(1)
    monkeypatch.setattr(dispatcher, "time", SimpleNamespace(monotonic=lambda: next(ticks) * 0.4))
    monkeypatch.setattr(dispatcher, "PAUSE_AFTER_FAILURE_S", 1.0)
    tried, reports = run({"a": False}, [["a", "b", "c", "d"]])
    # "a" fails (the pause runs to 1.8 s); "b" (1.2 s) and "c" (1.6 s) are skipped without
    # moving it; "d" (2.0 s) is tried again
    assert tried == ["a", "d"]
    assert reports == [(["a", "b", "c", "d"], ["a", "b", "c"])]
