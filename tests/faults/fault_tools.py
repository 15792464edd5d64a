"""Helpers of the fault suite: racing calls, what a user's store holds, clean error messages.

Kept apart from ``tests/conftest.py`` (owned by the fixtures); the fault tests
import this module by name (pytest puts this directory on ``sys.path``).
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar

import services
from sqlalchemy import create_engine, select
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from truemem_core import TrueMem
from truemem_core.storage.schema import jobs

T = TypeVar("T")

# What an error message shown to a user must never carry.
SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b")
DRIVER_WORDS = ("psycopg", "sqlite3", "aiosqlite", "sqlalchemy", "asyncpg")
ABSOLUTE_PATH = re.compile(r"(?<![\w:/])/(?:[\w.@+-]+/)+[\w.@+-]*")  # /a/b or /a/b/c.db


def race(calls: Sequence[Callable[[], T]], *, timeout: float = 120.0) -> list[T | BaseException]:
    """Run every call in its own thread, all released at once; each result or exception.

    A thread still running at ``timeout`` is a hang (a deadlock): it fails the caller.
    """
    barrier = threading.Barrier(len(calls))
    results: list[T | BaseException | None] = [None] * len(calls)

    def run(index: int, call: Callable[[], T]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except BaseException as exc:  # collected: the caller counts them by type
            results[index] = exc

    threads = [threading.Thread(target=run, args=(n, call), daemon=True)
               for n, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    hung = sum(thread.is_alive() for thread in threads)
    assert hung == 0, f"{hung} of {len(calls)} racing calls still running after {timeout}s"
    return results  # type: ignore[return-value]  # every slot was filled by its thread


def failures(results: Sequence[object]) -> list[str]:
    """The exceptions among ``results`` as ``Type: message`` (empty when all succeeded)."""
    return [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]


def exported_messages(memory: TrueMem, user: str) -> Counter[tuple[str, str]]:
    """``(session_id, content)`` of every stored message of ``user``, counted."""
    exported = memory.export_user(user)
    return Counter((session["session_id"], message["content"])
                   for session in exported["sessions"] for message in session["messages"])


def holds_nothing(memory: TrueMem, user: str, sessions: Sequence[str]) -> list[str]:
    """What the public API still shows of ``user`` (empty when the user is gone)."""
    left = [f"memory {m.text!r}" for m in memory.list_memories(user, include_archived=True)]
    for session in sessions:
        state = memory.sessions.get(user, session)
        left += [f"{session}: message {m.content!r}" for m in state.recent]
        if state.summary:
            left.append(f"{session}: summary")
    exported = memory.export_user(user)
    left += [f"export {part}" for part in ("memories", "deleted", "sessions") if exported[part]]
    return left


def _sync_url(database_url: str) -> str:
    url = make_url(database_url)
    driver = "sqlite" if url.get_backend_name() == "sqlite" else "postgresql+psycopg"
    return url.set(drivername=driver).render_as_string(hide_password=False)


def job_statuses(database_url: str) -> dict[str, str]:
    """Status of every job row (no public API shows them), read on a connection of our own."""
    engine = create_engine(_sync_url(database_url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return {row.key: row.status for row in conn.execute(select(jobs.c.key, jobs.c.status))}
    finally:
        engine.dispose()


def assert_clean_message(error: BaseException, *, secrets: Sequence[str] = ()) -> None:
    """``str(error)`` says what failed in words: no SQL, no driver, no path, no input text."""
    text = str(error)
    assert not SQL_WORDS.search(text), f"SQL in the message: {text!r}"
    assert not any(word in text.lower() for word in DRIVER_WORDS), f"driver named: {text!r}"
    assert not ABSOLUTE_PATH.search(text), f"a file path in the message: {text!r}"
    for secret in secrets:
        assert secret not in text, f"{secret!r} (input or parameter) echoed: {text!r}"


def worker_process(
    database_url: str, redis_url: str
) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A real ``truemem worker`` (two threads) on Redis; the short sweep re-sends jobs Redis
    lost."""
    return services.worker_process(database_url, redis_url, threads=2)


def hostile_ids() -> dict[str, str]:
    """Ids an attacker or a sloppy client sends; every one must be rejected."""
    return {
        "NUL": "ana\x00", "bell": "ana\x07", "newline": "ana\n", "escape": "\x1b[31mana",
        "zero-width space": "a\u200bna", "zero-width joiner": "ana\u200d",
        "right-to-left override": "\u202eana", "byte-order mark": "\ufeffana",
        "lone high surrogate": "ana\ud800", "lone low surrogate": "\udc00ana",
    }
