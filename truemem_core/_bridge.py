"""The one sync bridge: a private event loop in a daemon thread.

All of TrueMem's async work runs on this loop, whether the caller is sync code,
a notebook (which already runs a loop) or another event loop. Database
connections therefore never cross loops.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from truemem_core.errors import ClosedError

T = TypeVar("T")
P = ParamSpec("P")


class LoopThread:
    def __init__(self, name: str = "truemem-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.closed:
                raise ClosedError("this TrueMem is closed; open a new TrueMem to use the store")
            if self._loop is None:
                ready = threading.Event()
                self._thread = threading.Thread(
                    target=self._run, args=(ready,), name=self._name, daemon=True
                )
                self._thread.start()
                ready.wait()
            assert self._loop is not None
            return self._loop

    def _run(self, ready: threading.Event) -> None:
        self._loop = _new_loop()
        asyncio.set_event_loop(self._loop)
        ready.set()
        self._loop.run_forever()

    def _loop_for(self, coro: Coroutine[Any, Any, T]) -> asyncio.AbstractEventLoop:
        try:
            return self.loop
        except ClosedError:
            coro.close()  # never started: no "was never awaited" warning
            raise

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run on the private loop and wait (from any thread but the loop's own)."""
        loop = self._loop_for(coro)
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a sync TrueMem method was called from inside TrueMem's loop")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result()
        except BaseException:  # Ctrl-C or a signal while waiting: stop the work too
            future.cancel()
            raise

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await from the caller's loop while the work runs on the private loop."""
        loop = self._loop_for(coro)
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def stop(self) -> None:
        """Stop the loop for good: later calls raise ``ClosedError``."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            self.closed = True
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if threading.current_thread() is not thread:
            thread.join(timeout=10)
        loop.close()


class Bridged(Protocol):
    """What holds a ``LoopThread``: ``TrueMem`` and its namespaces."""

    @property
    def _loop(self) -> LoopThread: ...


B = TypeVar("B", bound=Bridged)


def sync_twin(
    amethod: Callable[Concatenate[B, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[B, P], T]:
    """The sync method of an ``a``-prefixed async one: the same signature and docstring
    (for mypy, IDEs and ``help()``), run on the owner's private loop. Each operation is
    written once, as ``async def aname``; ``name = sync_twin(aname)`` follows it."""

    @functools.wraps(amethod)
    def method(self: B, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._loop.run(amethod(self, *args, **kwargs))

    method.__name__ = amethod.__name__.removeprefix("a")
    method.__qualname__ = amethod.__qualname__.removesuffix(amethod.__name__) + method.__name__
    return method


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed (a dependency except on Windows): every call crosses
    this loop, and uvloop's wake-ups, callbacks and socket waits cost a fraction of the
    CPU of asyncio's pure-Python loop; asyncio's own loop otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
