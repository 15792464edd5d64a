"""Where embeddings run: threads of one per-process pool, below the event loop's priority.

Embedding is the heaviest work on the request path, and with ``embedding_threads``
it can fill every core. On a busy machine the operating system then shares the
cores between it and the thread that serves every other call (the event loop), so
a flood of one user's messages slows everyone. The pool's threads lower their own
scheduling priority (``nice`` +``NICE``, per thread on Linux) when they start, and
onnxruntime's worker threads, created by the first embedding in one of them,
inherit it: when both want a core, the loop gets it first; when the loop is idle,
embeddings get all of it, so an idle machine embeds as fast as before. Where the
priority cannot be lowered (another OS, a sandbox), the pool works the same without.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

NICE = 10  # CFS gives a nice-10 thread ~1/10 of a core against a nice-0 one
THREADS = 2  # concurrent embeddings; each uses ``embedding_threads`` cores at most

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def lower_priority() -> None:
    """Lower the calling thread's scheduling priority by ``NICE`` (best effort)."""
    if hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        with contextlib.suppress(OSError):
            thread = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, thread,
                           min(os.getpriority(os.PRIO_PROCESS, thread) + NICE, 19))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, "truemem-embed", initializer=lower_priority)
        return _pool


def _forget() -> None:
    """In a forked child the parent's threads do not exist; the next call starts new ones."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


async def run(function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` in a low-priority pool thread, awaited without blocking the loop."""
    return await asyncio.get_running_loop().run_in_executor(_executor(), function, *args)


@contextlib.asynccontextmanager
async def meanwhile(step: Awaitable[T]) -> AsyncIterator[asyncio.Future[T]]:
    """``step`` (a query's embedding) started now, for the block to await when it needs
    it; on the way out it is waited for, whatever happened in the block: never left
    running on a loop that may be closing. (Its error, if the block did not await it,
    is dropped: the block's own outcome is what the caller gets.)"""
    future = asyncio.ensure_future(step)
    try:
        yield future
    finally:
        await asyncio.gather(future, return_exceptions=True)
