"""The ``truemem`` command: the demo, memory inspection and editing, re-embedding,
maintenance, workers.

A user mistake never shows a traceback: it ends as one line on stderr,
``truemem: error: …``, and exit status 2. Commands that only read or change
existing data refuse a SQLite path where there is no store instead of creating one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, get_args
from urllib.parse import urlsplit, urlunsplit

from truemem_core._client import TrueMem
from truemem_core.cli import graph as graph_cli
from truemem_core.cli.importers import command as import_command
from truemem_core.cli.importers import formats as import_formats
from truemem_core.errors import (
    BrokerError,
    InvalidInputError,
    MissingDependencyError,
    StorageError,
    TrueMemError,
)
from truemem_core.records import Kind, Memory, synthesis_line
from truemem_core.storage.database import holds_store, require_store, resolve_url, sqlite_path
from truemem_core.storage.failures import is_outage

if TYPE_CHECKING:
    import redis

log = logging.getLogger("truemem.worker")

# The only commands that may create a store; every other one needs an existing one.
CREATES_STORE = {("memories", "add"), ("memories", "import"), ("user", "import"),
                 ("import", None)}

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


# -- memories, users, maintenance ------------------------------------------------


def _print_memory(memory: Memory) -> None:
    print(
        f"{memory.id}  [{memory.importance}] {memory.kind:<8} {memory.source:<9} "
        f"{memory.state:<8} {memory.text}"
    )


def _memories(args: argparse.Namespace, memory: TrueMem) -> None:
    if args.action == "list":
        items = memory.list_memories(args.user, include_archived=args.all)
        if args.json:
            print(json.dumps([m.to_dict() for m in items], indent=2))
            return
        for item in items:
            _print_memory(item)
        print(f"{len(items)} memories for user {args.user!r}", file=sys.stderr)
    elif args.action == "show":
        _print_memory(memory.get_memory(args.user, args.memory_id))
        for event in memory.history(args.user, args.memory_id):
            change = f"{event.old_text!r} -> {event.new_text!r}" if event.new_text else ""
            print(f"  {event.created_at:%Y-%m-%d %H:%M:%S} {event.action:<8} {change}")
    elif args.action == "add":
        _print_memory(memory.add_memory(args.user, args.text, importance=args.importance))
    elif args.action == "import":
        _import(args, memory)
    elif args.action == "edit":
        if args.text is None and args.importance is None:
            raise InvalidInputError("nothing to change: give --text and/or --importance")
        _print_memory(
            memory.update_memory(args.user, args.memory_id, text=args.text,
                                 importance=args.importance)
        )
    elif args.action == "delete":
        memory.delete_memory(args.user, args.memory_id)
        print(f"deleted {args.memory_id}")
    elif args.action == "search":
        for hit in memory.search(args.user, args.query, k=args.k):
            print(f"{hit.score:6.3f}  ", end="")
            _print_memory(hit.memory)


def _read_export(file: str) -> Any:
    text = import_command.read(file)  # its own error: the file cannot be read
    try:
        return import_formats.load_json(text)
    except ValueError as exc:  # JSONDecodeError, or nested too deeply
        raise InvalidInputError(
            f"{file} is not JSON ({exc}); give a file written by `truemem user export`"
        ) from exc


def _read_facts(file: str) -> tuple[list[Any], list[str]]:
    """The facts of a JSON array or JSON Lines file, and where each one is (for errors)."""
    text = import_command.read(file)
    if text.lstrip().startswith("["):
        try:
            facts = import_formats.load_json(text)
        except ValueError as exc:
            raise InvalidInputError(f"{file} is not a JSON array ({exc})") from exc
        return facts, [f"{file} item {n}" for n in range(len(facts))]
    lines = import_formats.json_lines(text, file)
    return [fact for _, fact in lines], [f"{file} line {n}" for n, _ in lines]


def _import(args: argparse.Namespace, memory: TrueMem) -> None:
    facts, where = _read_facts(args.file)
    try:
        with _bar("importing") as update:
            added = memory.add_memories(args.user, facts, importance=args.importance,
                                        kind=args.kind, progress=update)
    except InvalidInputError as exc:  # "item N: why" -> where item N is in the file
        item, _, why = str(exc).partition(": ")
        if not item.startswith("item ") or not item[5:].isdigit():
            raise
        raise InvalidInputError(f"{where[int(item[5:])]}: {why}") from exc
    print(f"imported {len(added)} facts for user {args.user!r} "
          f"into {len({m.id for m in added})} memories")


@contextlib.contextmanager
def _bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr from the first ``update(done, total)`` on (so that an
    error found before any work is the only line)."""
    # rich draws a live bar on a terminal and prints the final state elsewhere (logs, CI)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(label, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True))
    task = bar.add_task(label, total=None)
    started = threading.Event()

    def update(done: int, total: int) -> None:
        if not started.is_set():
            started.set()
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if started.is_set():
            bar.stop()


def _user(args: argparse.Namespace, memory: TrueMem) -> None:
    if args.action == "export":
        text = json.dumps(memory.export_user(args.user), indent=2, ensure_ascii=False)
        if not args.output:
            print(text)
            return
        try:
            Path(args.output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(
                f"cannot write {args.output}: {exc.strerror or exc}") from exc
    elif args.action == "import":
        restored = memory.import_user(args.user, _read_export(args.file))
        print(f"imported {len(restored)} memories for user {args.user!r}")
    elif args.action == "syntheses":
        found = memory.list_syntheses(args.user)
        if args.json:
            print(json.dumps([item.to_dict() for item in found], indent=2, ensure_ascii=False))
        for item in [] if args.json else found:
            print(f"{item.kind} {item.key} ({len(item.message_ids)} messages) "
                  f"{synthesis_line(item)[2:]}")
    elif args.action == "erase":
        if not args.yes:
            raise InvalidInputError(f"refusing to erase user {args.user!r} without --yes")
        print(f"erased user {args.user!r} ({memory.erase_user(args.user)} memories)")


def _reembed(args: argparse.Namespace, memory: TrueMem) -> None:
    with _bar("re-embedding") as update:
        count = memory.reembed(progress=update)
    print(f"re-embedded {count} vectors (memories and past messages)")


def _maintain(args: argparse.Namespace, memory: TrueMem) -> None:
    for user in args.user:
        changes = memory.maintain(user)
        for memory_id, state in sorted(changes.items()):
            print(f"{memory_id}  {state:<9}  {user}")
        noun = "memory" if len(changes) == 1 else "memories"
        print(f"{len(changes)} {noun} of user {user!r} changed state", file=sys.stderr)


def _demo(args: argparse.Namespace) -> int:
    from truemem_core.cli.demo import run_demo

    return 0 if run_demo(args.database) else 1


# -- worker: configuration ----------------------------------------------------------


@dataclass(frozen=True)
class WorkerConfig:
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


def _redis_client(url: str) -> redis.Redis:
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


def _give_up_after(flag: str | None) -> float:
    source, value = "--give-up-after", flag
    if value is None:
        source, value = f"${GIVE_UP_ENV}", os.environ.get(GIVE_UP_ENV)
        if not value:
            return DEFAULT_GIVE_UP_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds >= 0:  # also rejects nan
        raise InvalidInputError(
            f"{source} must be a number of seconds >= 0 (or inf), got {value!r}")
    return seconds


def _resolve(path: str) -> Any:
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
    target = _resolve(path)
    return target() if callable(target) and not hasattr(target, "acomplete") else target


def _worker_config(args: argparse.Namespace) -> WorkerConfig:
    """Every flag checked before anything starts (no connection, no process, no store)."""
    redis_url = args.redis_url or os.environ.get("TRUEMEM_REDIS_URL")
    if not redis_url:
        raise InvalidInputError(
            "truemem worker needs a Redis broker: pass --redis-url or set TRUEMEM_REDIS_URL "
            "(without Redis, TrueMem runs its background jobs in-process and needs no worker)")
    for flag, value in (("--processes", args.processes), ("--threads", args.threads)):
        if value < 1:
            raise InvalidInputError(f"{flag} must be at least 1, got {value}")
    give_up_after = _give_up_after(args.give_up_after)
    resolve_url(args.database)
    _redis_client(redis_url).close()
    if args.llm:
        _resolve(args.llm)
    return WorkerConfig(args.database, redis_url, args.processes, args.threads,
                        give_up_after, args.llm, args.pool_parent)


# -- worker: signals and Redis ------------------------------------------------------


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
        self._client = _redis_client(url)

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


# -- worker: one process --------------------------------------------------------------


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
            self._memory.serve_jobs(threads=self._threads)
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
        if not is_outage(exc) or memory.database_url.startswith("sqlite"):
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


# -- worker: a pool of processes ------------------------------------------------------


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


def _worker(args: argparse.Namespace) -> int:
    config = _worker_config(args)
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


# -- the parser -----------------------------------------------------------------------


def _add_worker(commands: Any) -> None:
    worker = commands.add_parser("worker", help="run background jobs from Redis")
    worker.add_argument("--redis-url", help="default: $TRUEMEM_REDIS_URL")
    worker.add_argument("--processes", type=int, default=1, help="worker processes (default 1)")
    worker.add_argument("--threads", type=int, default=2, help="threads per process (default 2)")
    worker.add_argument("--llm", metavar="MODULE:ATTR",
                        help="an LLM (or a factory returning one) for extraction and summaries")
    worker.add_argument(
        "--give-up-after", metavar="SECONDS",
        help=f"exit when Redis, or the database at start, stays unreachable this long "
        f"(default: ${GIVE_UP_ENV}, "
        f"else {DEFAULT_GIVE_UP_S:g}; inf never gives up)")
    worker.add_argument("--pool-parent", type=int, help=argparse.SUPPRESS)


def _add_memories(commands: Any) -> None:
    mem = commands.add_parser(
        "memories", help="list, show, add, import, edit, delete, search memories")
    mem_actions = mem.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in [("list", "a user's memories"), ("show", "one memory and its history"),
                       ("add", "store a fact"),
                       ("import", "add the facts of a JSON Lines file or JSON array"),
                       ("edit", "change a memory"),
                       ("delete", "delete a memory and its text"),
                       ("search", "the memories closest to a query")]:
        sub = mem_actions.add_parser(name, help=text)
        sub.add_argument("--user", required=True, help="the user's id")
        if name in ("show", "edit", "delete"):
            sub.add_argument("memory_id")
        if name == "list":
            sub.add_argument("--all", action="store_true", help="include archived memories")
            sub.add_argument("--json", action="store_true", help="print JSON")
        if name == "add":
            sub.add_argument("text")
        if name == "import":
            sub.add_argument("file", help='one fact a line: "text" or {"text": ..., '
                             '"importance": ..., "kind": ...}; or a JSON array of them')
            sub.add_argument("--kind", choices=get_args(Kind),
                             help="the kind of facts without one (default: classified)")
        if name in ("add", "import", "edit"):
            sub.add_argument("--importance", type=int, choices=range(1, 6))
        if name == "edit":
            sub.add_argument("--text")
        if name == "search":
            sub.add_argument("query")
            sub.add_argument("-k", type=int, default=None)


def _add_user(commands: Any) -> None:
    user = commands.add_parser(
        "user", help="export, import or erase all of a user's data; list its syntheses")
    user_actions = user.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = user_actions.add_parser("export", help="print (or write) the user's data as JSON")
    export.add_argument("--output", "-o")
    imp = user_actions.add_parser("import", help="restore an export under a user id")
    imp.add_argument("file")
    erase = user_actions.add_parser("erase", help="delete every row of the user")
    erase.add_argument("--yes", action="store_true", help="confirm")
    syntheses = user_actions.add_parser(
        "syntheses", help="the user's syntheses: a summary of each past session")
    syntheses.add_argument("--json", action="store_true", help="print JSON")
    for sub in (export, imp, erase, syntheses):
        sub.add_argument("--user", required=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="truemem",
        description="TrueMem's command line: the demo, memories and users, re-embedding, "
        "maintenance, background workers.",
        epilog="A mistake prints one 'truemem: error: ...' line and exits with status 2. "
        "Only 'memories add', 'memories import', 'user import' and 'import' create a missing "
        "store.")
    parser.add_argument(
        "--database", metavar="URL",
        help="SQLite path or database URL "
        "(default: $TRUEMEM_DATABASE_URL, else ~/.truemem/truemem.db)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="two scripted sessions, days apart, on a fresh store")
    _add_worker(commands)
    _add_memories(commands)
    _add_user(commands)
    graph_cli.add_parser(commands)
    import_command.add_parser(commands)
    commands.add_parser(
        "reembed", help="recompute every vector with the default embedder (after a model change)")
    maintain = commands.add_parser(
        "maintain", help="recompute scores and lifecycle states now, then prune")
    maintain.add_argument("--user", required=True, action="append",
                          help="the user's id (repeat for several users)")
    _add_plugins(commands)
    return parser


def _add_plugins(commands: Any) -> None:
    """Commands of other packages, each a 'truemem.cli' entry point ``register(commands)``
    that sets ``run`` (args -> exit code) on its parsers: serve, keys, mcp (truemem_server)."""
    for entry in sorted(entry_points(group="truemem.cli"), key=lambda e: e.name):
        entry.load()(commands)


# -- main -------------------------------------------------------------------------------

HANDLERS: dict[str, Callable[[argparse.Namespace, TrueMem], None]] = {
    "memories": _memories,
    "user": _user,
    "graph": graph_cli.run,
    "import": lambda args, memory: import_command.run(args, memory, _bar),
    "reembed": _reembed,
    "maintain": _maintain,
}


def _run(args: argparse.Namespace) -> int:
    if hasattr(args, "run"):  # a plugin's command
        return int(args.run(args))
    if args.command == "demo":
        return _demo(args)
    if args.command == "worker":
        return _worker(args)
    if (args.command, getattr(args, "action", None)) not in CREATES_STORE:
        require_store(args.database)
    with contextlib.ExitStack() as stack:
        database = args.database
        path = sqlite_path(resolve_url(database))
        if getattr(args, "dry_run", False) and path is not None and not holds_store(path):
            # nothing there yet, so nothing already imported: checked against an empty
            # store of its own, the path is left as it was
            database = str(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "dry.db")
        # one command, one caller: nothing to gain from loading models before they are needed
        with TrueMem(database, preload=False) as memory:
            HANDLERS[args.command](args, memory)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit outside this handler
        return code
    except TrueMemError as exc:
        print(f"truemem: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("truemem: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader left (`truemem memories list --user a | head`): quietly, and with
        # stdout on /dev/null so that flushing it at exit raises nothing either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1

