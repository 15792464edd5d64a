"""Long texts are read in a helper process, so that reading one never holds up other threads.

The rules of this package are pure Python. Reading a 100,000-character message takes
tens to hundreds of milliseconds, and a thread doing that holds the interpreter lock
(the GIL): every other thread of the process - TrueMem's event loop serving other
users, the database driver's threads - then waits up to the switch interval (5 ms)
each time it needs the lock, and one call needs it many times. A worker thread
(``asyncio.to_thread``) keeps the loop free of the *work*, not of the lock.

So a text of up to ``OFFLOAD_CHARS`` characters is read where it is asked for, in
the caller's thread (a few milliseconds at worst), and a longer one is sent to one
helper process; the caller waits for the answer in a blocking read, which releases
the GIL. The answer is the same: the helper runs the same functions.

The helper is a plain ``python -I -c`` child that imports this package and nothing
else: not the rest of TrueMem, and not the application's ``__main__``, which
``multiprocessing``'s spawn and forkserver start methods import again in the child
(an unguarded script would run its top level a second time). It is started on first
use, answers one request at a time (callers queue on a lock, without the GIL), ends
when its stdin closes (``shutdown()``, the last ``release()`` of the stores that
``hold()`` it, or the parent's exit) and is started again when next needed, also in a
forked child. If it cannot start or dies, the text is read in the caller's thread
(slower for the others, never a different answer), and after a failed start for the
next ``RETRY_AFTER_S`` seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

log = logging.getLogger("truemem.language")
T = TypeVar("T")

OFFLOAD_CHARS = 1_000  # up to this many characters a text is read in the caller's thread
RETRY_AFTER_S = 30.0  # after a failed start, texts are read in place this long
_PACKAGE = Path(__file__).resolve().parent.parent  # truemem_core/, imported without __init__
# The child: the package as a bare namespace (its __init__ imports all of TrueMem),
# answers on a copy of stdout, anything printed goes to stderr, Ctrl-C is the parent's,
# and it runs below the parent's priority, as the embedder's threads do.
_BOOT = """\
import contextlib, os, signal, sys, types
signal.signal(signal.SIGINT, signal.SIG_IGN)
with contextlib.suppress(OSError):
    os.nice(10)  # its work is a long text's; the parent's serving threads come first
package = types.ModuleType("truemem_core")
package.__path__ = [sys.argv[1]]
sys.modules["truemem_core"] = package
answers = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
from truemem_core.language.offload import serve
serve(sys.stdin.buffer, answers)
"""
_in_helper = False  # True in the helper itself: it reads everything in place


class _Unavailable(Exception):
    """The helper could not start or answer; the caller reads the text itself."""

    def __init__(self, message: str, *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet  # already said: the helper failed to start a moment ago


class _Helper:
    """One child process and the lock that gives it one request at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._failed_at = -RETRY_AFTER_S  # time.monotonic() of the last failed start
        self.pid: int | None = None  # the running helper's

    def call(self, function: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._lock:
            fresh = self._process is None
            process = self._process or self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                _send(process.stdin, pickle.dumps((function, args), pickle.HIGHEST_PROTOCOL))
                ok, value = pickle.loads(_receive(process.stdout))
            except (OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
                self._stop()
                if fresh:  # died before its first answer: it cannot start here
                    self._failed_at = time.monotonic()
                raise _Unavailable(f"the text helper stopped answering: {exc!r}") from exc
            except BaseException:  # interrupted mid-exchange: the pipe is out of step
                self._stop()
                raise
        if ok:
            return value  # type: ignore[no-any-return]
        raise value

    def _start(self) -> subprocess.Popen[bytes]:
        if time.monotonic() - self._failed_at < RETRY_AFTER_S:
            raise _Unavailable("", quiet=True)
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, str(_PACKAGE)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        except (OSError, ValueError) as exc:  # no usable interpreter (embedded, frozen)
            self._failed_at = time.monotonic()
            raise _Unavailable(f"could not start the text helper: {exc!r}") from exc
        self._process, self.pid = process, process.pid
        return process

    def _stop(self) -> None:
        process, self._process, self.pid = self._process, None, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]  # both are pipes
        try:
            process.wait(timeout=5)  # stdin closed: the helper returns at once
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def shutdown(self) -> None:
        with self._lock:  # after the request in progress, if any
            self._stop()

    def forget(self) -> None:
        """In a forked child: the parent's helper and lock are not this process's."""
        process, self._process, self.pid = self._process, None, None
        self._lock = threading.Lock()
        if process is not None:
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    stream.close()  # type: ignore[union-attr]  # only this copy of the pipe
            process.returncode = 0  # not this process's child: never waited for here


_helper = _Helper()
atexit.register(_helper.shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_helper.forget)


def run(function: Callable[..., T], *args: Any, size: int) -> T:
    """``function(*args)``, in the helper process when ``size`` (characters of text to
    read) is over ``OFFLOAD_CHARS``; ``function`` must be importable by its name."""
    if size <= OFFLOAD_CHARS or _in_helper:
        return function(*args)
    try:
        return _helper.call(function, args)
    except _Unavailable as exc:
        if not exc.quiet:
            log.warning("%s; reading the text in this process", exc)
        return function(*args)


def shutdown() -> None:
    """End the helper process (after the request in progress); the next long text
    starts a new one. Safe to call at any time, from any thread, more than once."""
    _helper.shutdown()


_holders = 0
_holders_lock = threading.Lock()


def hold() -> None:
    """A store that may send long texts opened (the helper still starts on first use)."""
    global _holders
    with _holders_lock:
        _holders += 1


def release() -> None:
    """A store that called :func:`hold` closed; the last one to close ends the helper."""
    global _holders
    with _holders_lock:
        _holders = max(_holders - 1, 0)
        last = _holders == 0
    if last:
        shutdown()


def helper_pid() -> int | None:
    """The running helper's process id; ``None`` before the first long text or after
    :func:`shutdown`."""
    return _helper.pid


_LENGTH = struct.Struct("<Q")  # each message: its length, then its pickle


def _send(stream: IO[bytes], data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes:
    head = stream.read(_LENGTH.size)
    if len(head) == _LENGTH.size:
        (size,) = _LENGTH.unpack(head)
        data = stream.read(size)
        if len(data) == size:
            return data
    raise EOFError("the other end closed the pipe")


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """The helper's loop: ``(function, args)`` in, ``(ok, result or exception)`` out."""
    global _in_helper
    _in_helper = True
    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        try:
            function, args = pickle.loads(request)
            answer: tuple[bool, Any] = (True, function(*args))
        except Exception as exc:
            answer = (False, exc)
        try:
            data = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result or exception: say what it was
            data = pickle.dumps((False, RuntimeError(repr(exc))), pickle.HIGHEST_PROTOCOL)
        _send(answers, data)
