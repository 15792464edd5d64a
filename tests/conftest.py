"""Shared pytest fixtures."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import db_access
import pytest
import services
from sqlalchemy import select

from truemem_core import StorageError, TrueMem
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import store_meta

# =========================================================================== #
# Test services: PostgreSQL + pgvector and Redis.
# The logic lives in tests/services.py; these fixtures only wrap it.
#
#   postgres_url  (session) -> str   "postgresql+psycopg://…" of a fresh database
#   redis_server  (session) -> services.RedisServer   local, stoppable server
#   redis_url     (session) -> str   "redis://127.0.0.1:<port>/0"
#
# A service that cannot start FAILS the tests that need it (never skips).
# Under pytest-xdist (`run.py test`) each worker is a session of its own and starts
# its own servers; on external ones, workers keep apart by random database names
# (PostgreSQL) and by database number (Redis, see ``redis_url``).
# =========================================================================== #


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A ``postgresql+psycopg://`` URL of a fresh ``truemem_test_<random>`` database.

    The database has the ``vector`` and ``pg_trgm`` extensions. It lives on a
    throw-away embedded PostgreSQL server, or on the server of
    ``TRUEMEM_TEST_DATABASE_URL`` when that is set; it is removed after the session.
    """
    error: str | None
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(services.postgres_database())
        except services.ServiceError as exc:
            error = str(exc)
        else:
            error = None
        if error is not None:  # failed outside the except block: no exception chain shown
            pytest.fail(
                services.failure_message("PostgreSQL", error, services.postgres_hint()),
                pytrace=False,
            )
        yield url


_REDIS_SERVER_KEY = pytest.StashKey[services.RedisServer]()


@pytest.fixture(scope="session")
def redis_server(request: pytest.FixtureRequest) -> Iterator[services.RedisServer]:
    """A local Redis server that tests may ``stop()``, ``start()`` and ``restart()``.

    It is always a local ``redis-server`` (even when ``TRUEMEM_TEST_REDIS_URL`` is
    set), keeps its port across restarts and starts empty after a restart. After
    every test that used it, it is started again if the test left it stopped.
    """
    server = services.RedisServer()
    error: str | None
    try:
        try:
            server.start()
        except services.ServiceError as exc:
            error = str(exc)
        else:
            error = None
        if error is not None:
            pytest.fail(
                services.failure_message("Redis", error, services.redis_hint()),
                pytrace=False,
            )
        request.config.stash[_REDIS_SERVER_KEY] = server
        yield server
    finally:
        if _REDIS_SERVER_KEY in request.config.stash:
            del request.config.stash[_REDIS_SERVER_KEY]
        server.close()


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> str:
    """``TRUEMEM_TEST_REDIS_URL`` if set, else the URL of the ``redis_server`` fixture.

    With pytest-xdist each worker takes its own database of that Redis: the URL's
    number plus the worker's (``gw1`` on ``…/0`` uses ``…/1``).
    """
    external = os.environ.get(services.REDIS_URL_ENV)
    if external:
        return services.worker_redis_url(external, services.xdist_worker())
    server: services.RedisServer = request.getfixturevalue("redis_server")
    return server.url


@pytest.fixture(autouse=True)
def _restart_stopped_redis(request: pytest.FixtureRequest) -> Iterator[None]:
    """Bring the shared Redis server back if a test stopped it and did not restart it."""
    yield
    server = request.config.stash.get(_REDIS_SERVER_KEY, None)
    if server is not None:
        server.start()  # a no-op while it runs


# =========================================================================== #
# End of test services.
# =========================================================================== #


# Markers follow from what a test uses, so nobody has to remember them: a test on
# the PostgreSQL backend or asking for its URL is ``postgres``; one asking for
# Redis is ``redis``; these paths drive Chromium or start child processes (servers,
# workers, notebooks, the docs' scripts) or run fault scenarios. ``run.py test --fast``
# runs everything else.
BROWSER = ("tests/server/test_ui_browser.py",)
SLOW = ("tests/faults/", "tests/server/test_serve.py", "tests/server/test_mcp.py",
        "tests/server/test_mcp_graph.py", "tests/server/test_openapi_fuzz.py",
        "tests/test_docs.py", "tests/test_notebooks.py", "tests/core/cli/test_worker_cli.py",
        "tests/core/cli/test_cli.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix()
        if path.startswith(BROWSER):
            item.add_marker(pytest.mark.browser)
        if path.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        uses = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("backend") == "postgres" or uses & {"postgres_url", "_postgres_admin_url"}:
            item.add_marker(pytest.mark.postgres)
        if uses & {"redis_url", "redis_server"}:
            item.add_marker(pytest.mark.redis)


# =========================================================================== #
# TrueMem stores, one fresh database per test, on every backend.
#
#   backend    "sqlite" | "postgres"   (parametrises every test using a store)
#   store_url  (function) -> str       URL of a store migrated to the newest revision,
#                                      with no embedder recorded yet
#   memory     (function) -> TrueMem   a TrueMem on store_url, closed after the test
#   tmp_url    (function) -> str       URL of an EMPTY database (PostgreSQL: with the
#                                      extensions only), for tests that migrate it
#                                      step by step themselves
#
# Migrating takes far longer than copying a database, so each kind of database
# is prepared once per session as a template and every test gets a copy: on
# PostgreSQL ``CREATE DATABASE … TEMPLATE``, on SQLite a copy of the file.
# =========================================================================== #

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _fail(error: str) -> NoReturn:
    pytest.fail(services.failure_message("PostgreSQL", error, services.postgres_hint()),
                pytrace=False)


def _migrate_to_head(url: str) -> None:
    """Run every migration on the store at ``url``, and nothing else.

    ``Database(embedder=None)`` records no embedder: tests use different
    embedders, and the first TrueMem opening a copy records its own. The copies share
    the server's message id key (migration 0019), as copies of one store do.
    """

    async def run() -> None:
        db = Database(resolve_url(url), embedder=None)
        try:
            await db.open()
        finally:
            await db.close()

    asyncio.run(run())
    recorded = db_access.rows(url, select(store_meta).where(store_meta.c.key != "message_id_key"))
    if recorded:
        raise services.ServiceError(f"a migrated store already holds {recorded}")


@pytest.fixture(scope="session")
def _postgres_admin_url(postgres_url: str) -> str:
    return services.sqlalchemy_url(postgres_url, database="postgres")


@contextlib.contextmanager
def _postgres_template(admin: str, name: str, *, migrated: bool) -> Iterator[str]:
    error: str | None = None
    try:
        services.create_database(admin, name)
        if migrated:
            _migrate_to_head(services.sqlalchemy_url(admin, database=name))
        services.seal_template(admin, name)
    except (services.ServiceError, StorageError) as exc:
        error = str(exc)
    try:
        if error is not None:  # outside the except block: no exception chain shown
            _fail(f"cannot prepare the template database {name!r}: {error}")
        yield name
    finally:
        services.drop_database(admin, name)


@pytest.fixture(scope="session")
def _postgres_empty_template(_postgres_admin_url: str) -> Iterator[str]:
    """A database with the extensions only, closed to connections: what tmp_url copies."""
    name = f"truemem_tpl_{secrets.token_hex(4)}_empty"
    with _postgres_template(_postgres_admin_url, name, migrated=False) as template:
        yield template


@pytest.fixture(scope="session")
def _postgres_store_template(_postgres_admin_url: str) -> Iterator[str]:
    """A database migrated to head, closed to connections: what store_url copies."""
    name = f"truemem_tpl_{secrets.token_hex(4)}_head"
    with _postgres_template(_postgres_admin_url, name, migrated=True) as template:
        yield template


@pytest.fixture(scope="session")
def _sqlite_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "truemem.db"
    _migrate_to_head(f"sqlite:///{path}")
    # one self-contained file: no write-ahead log beside it to copy as well
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    return path


@contextlib.contextmanager
def _postgres_copy(admin: str, template: str) -> Iterator[str]:
    name = f"truemem_t_{secrets.token_hex(6)}"
    error: str | None = None
    try:
        services.create_database(admin, name, template=template,
                                 file_copy=services.embedded_postgres())
    except services.ServiceError as exc:
        error = str(exc)
    if error is not None:  # failed outside the except block: no exception chain shown
        _fail(error)
    try:
        yield services.sqlalchemy_url(admin, database=name)
    finally:
        services.drop_database(admin, name)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        path = tmp_path / "truemem.db"
        shutil.copyfile(request.getfixturevalue("_sqlite_store_template"), path)
        yield f"sqlite:///{path}"
        return
    with _postgres_copy(request.getfixturevalue("_postgres_admin_url"),
                        request.getfixturevalue("_postgres_store_template")) as url:
        yield url


@pytest.fixture
def tmp_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'truemem.db'}"
        return
    with _postgres_copy(request.getfixturevalue("_postgres_admin_url"),
                        request.getfixturevalue("_postgres_empty_template")) as url:
        yield url


@pytest.fixture
def memory(store_url: str) -> Iterator[TrueMem]:
    with TrueMem(store_url) as store:
        yield store
