"""The worker supervisor behind ``truemem worker``: it waits for Redis and the database,
serves jobs in one process (``ServeThread``) or starts a pool of them, watches Redis
and the pool, and stops cleanly on SIGTERM or SIGINT (``StopSignals``)."""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from truemem_core import (
    BrokerError,
    InvalidInputError,
    MissingDependencyError,
    StorageError,
    TrueMem,
    TrueMemError,
    is_outage,
    require_store,
)

if TYPE_CHECKING:
    import redis

log = logging.getLogger("truemem.worker")

GIVE_UP_ENV = "TRUEMEM_WORKER_GIVE_UP_AFTER"
DEFAULT_GIVE_UP_S = 60.0
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 30.0
HEALTH_CHECK_S = 5.0
POOL_POLL_S = 0.5
# A child needs up to 10 s to let running jobs finish (Dramatiq's stop timeout), then closes.
STOP_GRACE_S = 30.0
PING_TIMEOUT_S = 2.0
PROBE_USER = "truemem-worker"


@dataclass(frozen=True)
class WorkerConfig:
    """What ``truemem worker``'s flags asked for, every one checked."""

    database: str | None
    redis_url: str
    processes: int
    threads: int
    give_up_after: float
    llm: str | None
    pool_parent: int | None


_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def _safe_url(url: str) -> str:
    """The URL without its password (``user:password@`` or ``?password=``), for messages
    and logs."""
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
    except ValueError:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def redis_client(url: str) -> redis.Redis:
    try:
        import redis
    except ImportError as exc:
        raise MissingDependencyError(
            "truemem worker needs the Redis client: pip install 'truemem[redis]'") from exc
    try:
        return redis.Redis.from_url(url, socket_connect_timeout=PING_TIMEOUT_S,
                                    socket_timeout=PING_TIMEOUT_S)
    except ValueError as exc:
        raise InvalidInputError(
            f"not a Redis URL: {_safe_url(url)!r} ({exc}); expected redis://host:port/db, "
            "rediss://… or unix://…") from exc


def resolve_llm(path: str) -> Any:
    """``package.module:attribute`` → the attribute; the current directory is importable."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute or module_name.startswith("."):
        raise InvalidInputError(
            f"--llm takes module:attribute (e.g. myapp.llms:build), got {path!r}")
    if os.getcwd() not in sys.path:  # the `truemem` script, unlike `python -m`, omits it
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidInputError(f"--llm: cannot import {module_name!r}: {exc}") from exc
    try:
        return getattr(module, attribute)
    except AttributeError as exc:
        raise InvalidInputError(
            f"--llm: module {module_name!r} has no attribute {attribute!r}") from exc


def _load_llm(path: str) -> Any:
    """The LLM named by ``--llm``, called first if it is a factory."""
    target = resolve_llm(path)
    return target() if callable(target) and not hasattr(target, "acomplete") else target


class Stopped(Exception):
    """SIGTERM or SIGINT asked the worker to stop."""


class StopSignals:
    """SIGTERM and SIGINT ask for a clean stop.

    The handler raises only inside ``sleep``: a signal never cuts a step in half
    (spawning a child, opening the store, closing it). One that arrives during a
    step is kept and honoured at the next ``sleep``; later ones are ignored, the
    stop being under way. ``sleep`` waits on the wakeup fd, which the interpreter
    writes whichever thread the kernel delivers the signal to (a plain
    ``time.sleep`` in the main thread would sleep on).
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._sleeping = False
        self._wakeup, writer = socket.socketpair()
        for end in (self._wakeup, writer):
            end.setblocking(False)
        self._writer = writer  # kept open for the life of the process
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self._sleeping:
            self._sleeping = False
            raise Stopped

    def sleep(self, seconds: float) -> None:
        self._sleeping = True
        try:
            if self.received is not None:
                raise Stopped
            select.select([self._wakeup], [], [], seconds)
            with contextlib.suppress(BlockingIOError):
                while self._wakeup.recv(64):
                    pass
        finally:
            self._sleeping = False


def wait_out(
    problem: Callable[[], str | None], what: str, error: type[TrueMemError],
    give_up_after: float, signals: StopSignals,
) -> None:
    """Return once ``problem()`` is None (``what`` answers): retried with exponential
    back-off, one log line per step; ``error`` after ``give_up_after`` seconds."""
    started, delay = time.monotonic(), FIRST_RETRY_S
    while (reason := problem()) is not None:
        waited = time.monotonic() - started
        if waited >= give_up_after:
            raise error(f"{what} unreachable for {waited:.0f}s ({reason}); giving up "
                        f"(the limit is {give_up_after:g}s: --give-up-after or ${GIVE_UP_ENV})")
        pause = min(delay, give_up_after - waited)
        log.warning("%s is unreachable (%s); retrying in %.1fs, %s", what, reason, pause,
                    "never giving up" if math.isinf(give_up_after)
                    else f"giving up after {give_up_after:g}s")
        signals.sleep(pause)
        delay = min(delay * 2, MAX_RETRY_S)
    if delay > FIRST_RETRY_S:
        log.info("%s answers again", what)


class RedisProbe:
    """PING with a short timeout; ``wait`` retries with exponential back-off."""

    def __init__(self, url: str) -> None:
        self.url = _safe_url(url)
        self._client = redis_client(url)

    def problem(self) -> str | None:
        """None if Redis answers, else why not; raises if waiting cannot help."""
        import redis

        try:
            self._client.ping()
        except redis.AuthenticationError as exc:
            raise BrokerError(f"Redis at {self.url} refused the worker: {exc}") from exc
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            return str(exc) or type(exc).__name__
        except redis.RedisError as exc:
            raise BrokerError(f"Redis at {self.url} failed: {exc}") from exc
        return None

    def wait(self, give_up_after: float, signals: StopSignals) -> None:
        """Return once Redis answers: one log line per back-off step, then give up."""
        wait_out(self.problem, f"Redis at {self.url}", BrokerError, give_up_after, signals)

    def close(self) -> None:
        self._client.close()


def _not_a_connection_error(record: logging.LogRecord) -> bool:
    """Dramatiq's two consumer threads log every reconnection (40 lines a minute); the
    worker reports an outage itself, once per back-off step."""
    return not (record.name.startswith("dramatiq.worker.ConsumerThread")
                and str(record.msg).startswith("Consumer encountered a connection error"))


def _configure_logging() -> None:
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s [%(process)d] %(name)s %(levelname)s: %(message)s")
    log.setLevel(logging.INFO)
    for handler in logging.getLogger().handlers:  # consumer loggers are named per queue
        handler.addFilter(_not_a_connection_error)


class ServeThread(threading.Thread):
    """``serve_jobs`` in a daemon thread: it only ends with the process (closing the
    store stops its Dramatiq worker), so the main thread is free to watch Redis and
    the signals."""

    def __init__(self, memory: TrueMem, threads: int) -> None:
        super().__init__(name="truemem-serve", daemon=True)
        self._memory, self._threads = memory, threads
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._memory.admin.serve_jobs(threads=self._threads)
        except BaseException as exc:  # handed to the main thread, which reports it
            self.error = exc


def _serve(config: WorkerConfig, signals: StopSignals, probe: RedisProbe) -> int:
    require_store(config.database)  # a mistyped path would serve an empty store of its own
    llm = _load_llm(config.llm) if config.llm else None
    memory = TrueMem(config.database, redis_url=config.redis_url, llm=llm)
    try:
        # Open the store first: a wrong store fails here with its own message, and
        # serve_jobs then starts its Dramatiq worker in one step of TrueMem's loop,
        # which a close can never interleave with. A database that does not answer yet
        # (started after the worker, restarting) is waited for, as Redis is.
        wait_out(lambda: _store_problem(memory), "the database", StorageError,
                 config.give_up_after, signals)
        serving = ServeThread(memory, config.threads)
        serving.start()
        log.info("serving jobs with %d threads from %s (Ctrl-C or SIGTERM to stop)",
                 config.threads, probe.url)
        return _watch(serving, config, signals, probe)
    finally:
        memory.close()


def _store_problem(memory: TrueMem) -> str | None:
    """None once the store opens; why not while the database cannot be reached; raises
    what waiting cannot help (a refused password, a missing database, a wrong store)."""
    try:
        memory.list_memories(PROBE_USER)
    except StorageError as exc:
        if not is_outage(exc) or memory.admin.database_url.startswith("sqlite"):
            raise  # a file that cannot be opened has no server to wait for
        return "no connection"
    return None


def _watch(
    serving: ServeThread, config: WorkerConfig, signals: StopSignals, probe: RedisProbe
) -> int:
    """Until a signal: check that jobs are served, Redis answers and the pool is there."""
    while True:
        signals.sleep(HEALTH_CHECK_S)
        if not serving.is_alive():
            raise serving.error or BrokerError("serving jobs stopped unexpectedly")
        if config.pool_parent is not None and os.getppid() != config.pool_parent:
            log.warning("the worker pool's parent process is gone; stopping")
            return 1
        if probe.problem() is not None:
            log.warning("lost Redis at %s; jobs stay pending in the database meanwhile",
                        probe.url)
            probe.wait(config.give_up_after, signals)


def _child_argv(config: WorkerConfig) -> list[str]:
    """A pool worker's command line: the URLs, which may hold passwords, go in its
    environment (``_child_env``), never where ``ps`` shows them to every local user."""
    argv = [sys.executable, "-m", "truemem_core.cli", "worker", "--processes", "1",
            "--threads", str(config.threads), "--give-up-after", str(config.give_up_after),
            "--pool-parent", str(os.getpid())]
    return argv + (["--llm", config.llm] if config.llm else [])


def _child_env(config: WorkerConfig) -> dict[str, str]:
    urls = {"TRUEMEM_REDIS_URL": config.redis_url,
            **({"TRUEMEM_DATABASE_URL": config.database} if config.database else {})}
    return {**os.environ, **urls}


def _worker_pool(config: WorkerConfig, signals: StopSignals) -> int:
    """``--processes`` single-process workers; a signal stops them all, and so does
    the end of any one of them (the pool is restarted as a whole)."""
    children: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(config.processes):
            children.append(subprocess.Popen(_child_argv(config), env=_child_env(config)))
        log.info("started %d worker processes: %s", len(children),
                 " ".join(str(c.pid) for c in children))
        while True:
            signals.sleep(POOL_POLL_S)
            for child in children:
                if (code := child.poll()) is not None:
                    log.warning("worker process %d exited with status %d; stopping the pool",
                                child.pid, code)
                    return code if code > 0 else int(code < 0)
    finally:
        _stop_children(children)


def _stop_children(children: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each, a grace period to finish running jobs, then SIGKILL."""
    running = [child for child in children if child.poll() is None]
    for child in running:
        child.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for child in running:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("worker process %d did not stop within %gs; killing it "
                        "(its jobs stay pending and are sent again)", child.pid, STOP_GRACE_S)
            child.kill()
            child.wait()


def run(config: WorkerConfig) -> int:
    """Serve jobs (or start a pool of processes that do) until a signal stops them."""
    _configure_logging()
    signals = StopSignals()
    probe = RedisProbe(config.redis_url)
    try:
        probe.wait(config.give_up_after, signals)
        if config.processes > 1:
            return _worker_pool(config, signals)
        return _serve(config, signals, probe)
    except Stopped:
        log.info("stopped by %s", signal.Signals(signals.received or signal.SIGTERM).name)
        return 0
    finally:
        probe.close()
