"""``truemem worker`` as real processes: Redis unreachable or lost, stop signals, the pool."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import services
from sqlalchemy.engine import make_url

from truemem_core import TrueMem

# Bounds a hang only: every wait below ends on an event (a line, an exit) long before.
PATIENCE_S = 120


class Worker:
    """A ``truemem worker`` process whose stderr lines are collected as they come.

    It leads its own process group, so that ``close`` can kill every process it
    started even when the worker itself failed to stop them.
    """

    def __init__(self, database: Path | str, redis_url: str, *flags: str) -> None:
        argv = [sys.executable, "-m", "truemem_core.cli", "--database", str(database),
                "worker", "--redis-url", redis_url, "--threads", "1", *flags]
        self.process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        self.seen: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def output(self) -> str:
        return "".join(self.seen)

    def wait_for(self, text: str, count: int = 1) -> None:
        """Read stderr until ``count`` lines contain ``text``."""
        while sum(text in line for line in self.seen) < count:
            line = self._lines.get(timeout=PATIENCE_S)
            assert line is not None, f"the worker exited before {text!r}:\n{self.output}"
            self.seen.append(line)

    def finish(self) -> int:
        """Wait for the exit; then ``output`` holds what every process of the group wrote."""
        code = self.process.wait(timeout=PATIENCE_S)
        self._reader.join(timeout=PATIENCE_S)  # EOF: every process holding stderr is gone
        with contextlib.suppress(queue.Empty):
            while (line := self._lines.get_nowait()) is not None:
                self.seen.append(line)
        return code

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._reader.join(timeout=PATIENCE_S)
        assert self.process.stderr is not None
        if not self._reader.is_alive():  # closing under a blocked reader would hang
            self.process.stderr.close()


@contextmanager
def worker(database: Path | str, redis_url: str, *flags: str) -> Iterator[Worker]:
    running = Worker(database, redis_url, *flags)
    try:
        yield running
    finally:
        running.close()


def _store(tmp_path: Path) -> Path:
    """A SQLite store, made as an application makes it (a worker needs an existing one)."""
    path = tmp_path / "w.db"
    with TrueMem(path, preload=False) as memory:
        memory.list_memories("ana")  # the first call opens (and makes) the store
    return path


def test_worker_gives_up_when_redis_is_unreachable(tmp_path: Path) -> None:
    database = tmp_path / "w.db"
    nowhere = f"redis://127.0.0.1:{services.free_port()}/0"
    with worker(database, nowhere, "--give-up-after", "2") as running:
        assert running.finish() == 2
    lines = running.output.splitlines()
    assert lines[-1].startswith(f"truemem: error: Redis at {nowhere} unreachable")
    assert "giving up" in lines[-1]
    # one line per back-off step (1 s, then what is left of the 2 s), then the error
    assert 2 <= len(lines) <= 4, running.output
    assert all("retrying in" in line for line in lines[:-1])
    assert not database.exists()  # the store is opened only once Redis answers


def test_a_redis_password_in_the_query_is_never_shown(tmp_path: Path) -> None:
    port = services.free_port()
    nowhere = f"redis://127.0.0.1:{port}/0?password=QuerySecret1"
    with worker(tmp_path / "w.db", nowhere, "--give-up-after", "1") as running:
        assert running.finish() == 2
    assert "QuerySecret1" not in running.output
    assert f"redis://127.0.0.1:{port}/0?password=*** unreachable" in running.output


def test_worker_gives_up_after_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRUEMEM_WORKER_GIVE_UP_AFTER", "0")
    nowhere = f"redis://127.0.0.1:{services.free_port()}/0"
    with worker(tmp_path / "w.db", nowhere) as running:
        assert running.finish() == 2
    [line] = running.output.splitlines()  # no retry: straight to the error
    assert line.startswith("truemem: error: Redis at") and "giving up" in line


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_worker_stops_cleanly_on_signal(
    signum: signal.Signals, tmp_path: Path, redis_url: str
) -> None:
    with worker(_store(tmp_path), redis_url) as running:
        running.wait_for("serving jobs")
        running.process.send_signal(signum)
        assert running.finish() == 0
    assert f"stopped by {signum.name}" in running.output
    assert "Task was destroyed" not in running.output
    assert "Warning" not in running.output and "Traceback" not in running.output


def test_worker_exits_when_redis_goes_away(
    tmp_path: Path, redis_server: services.RedisServer
) -> None:
    with worker(_store(tmp_path), redis_server.url, "--give-up-after", "2") as running:
        running.wait_for("serving jobs")
        redis_server.stop()
        assert running.finish() == 2
    assert "giving up" in running.output.splitlines()[-1]
    assert "Consumer encountered a connection error" not in running.output  # Dramatiq's 40/min
    assert 1 <= running.output.count("is unreachable") <= 3, running.output
    assert "Traceback" not in running.output


def _elsewhere(store_url: str, socket_dir: Path) -> tuple[str, Path, Path]:
    """The PostgreSQL store's URL with its socket looked for in ``socket_dir``, where
    nothing listens; the socket file the URL then names, and the server's real one."""
    real = make_url(store_url)
    socket_name = f".s.PGSQL.{real.port or 5432}"
    moved = real.set(query={**real.query, "host": str(socket_dir)})
    return (moved.render_as_string(hide_password=False), socket_dir / socket_name,
            Path(str(real.query["host"])) / socket_name)


@pytest.mark.parametrize("backend", ["postgres"])  # a file store has no server to wait for
def test_worker_waits_for_a_database_that_starts_after_it(
    tmp_path: Path, store_url: str, redis_url: str
) -> None:
    """As in a compose file whose worker starts before PostgreSQL answers: the worker
    waits (one line per back-off step) and serves once the server is there."""
    url, expected, server = _elsewhere(store_url, tmp_path)
    with worker(url, redis_url) as running:
        running.wait_for("the database is unreachable", count=2)
        expected.symlink_to(server)  # the server "starts": its socket appears
        running.wait_for("serving jobs")
        running.process.send_signal(signal.SIGTERM)
        assert running.finish() == 0
    assert "the database answers again" in running.output
    assert "Traceback" not in running.output


@pytest.mark.parametrize("backend", ["postgres"])
def test_worker_gives_up_on_a_database_that_never_answers(
    tmp_path: Path, store_url: str, redis_url: str
) -> None:
    url, _, _ = _elsewhere(store_url, tmp_path)
    with worker(url, redis_url, "--give-up-after", "2") as running:
        assert running.finish() == 2
    lines = running.output.splitlines()
    assert lines[-1].startswith("truemem: error: the database unreachable for 2s"), lines
    assert "giving up" in lines[-1]
    assert all("retrying in" in line for line in lines[:-1]) and len(lines) <= 4, lines
    assert "Traceback" not in running.output


def test_a_mistyped_store_path_is_an_error_at_once_and_makes_nothing(
    tmp_path: Path, redis_url: str
) -> None:
    """A worker serving an empty store of its own would take jobs it cannot find."""
    _store(tmp_path)
    with worker(tmp_path / "w2.db", redis_url) as running:
        assert running.finish() == 2
    assert running.output.startswith("truemem: error: no TrueMem store at")
    assert not (tmp_path / "w2.db").exists()


def test_a_store_file_that_cannot_be_opened_is_an_error_at_once(
    tmp_path: Path, redis_url: str
) -> None:
    """A file has no server to wait for: no back-off, the error and status 2."""
    (tmp_path / "store.db").mkdir()
    with worker(tmp_path / "store.db", redis_url, "--give-up-after", "60") as running:
        assert running.finish() == 2
    [line] = running.output.splitlines()
    assert line.startswith("truemem: error: ") and "retrying" not in running.output


def _descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_pool_stops_every_child_on_sigterm(tmp_path: Path, redis_url: str) -> None:
    with worker(_store(tmp_path), redis_url, "--processes", "2") as pool:
        pool.wait_for("serving jobs", count=2)
        children = _descendants(pool.process.pid)
        assert len(children) == 2
        for child in children:  # the URLs (and any password in them) are not in `ps`
            assert not any("redis://" in part or ".db" in part for part in child.cmdline())
        pool.process.send_signal(signal.SIGTERM)
        assert pool.finish() == 0
        assert _alive(children) == []  # the parent waited for every child
    assert pool.output.count("stopped by SIGTERM") == 3
    assert "Task was destroyed" not in pool.output


def test_pool_children_stop_when_the_parent_is_killed(tmp_path: Path, redis_url: str) -> None:
    with worker(_store(tmp_path), redis_url, "--processes", "2") as pool:
        pool.wait_for("serving jobs", count=2)
        children = _descendants(pool.process.pid)
        pool.process.kill()  # SIGKILL: no chance to forward anything
        pool.process.wait()
        _, alive = psutil.wait_procs(children, timeout=PATIENCE_S)
        assert alive == []
