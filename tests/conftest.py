"""Shared pytest fixtures."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import services

from truemem_core import TrueMem

# =========================================================================== #
# Test services: PostgreSQL + pgvector and Redis.
# The logic lives in tests/services.py; these fixtures only wrap it.
#
#   postgres_url  (session) -> str   "postgresql+psycopg://…" of a fresh database
#   redis_server  (session) -> services.RedisServer   local, stoppable server
#   redis_url     (session) -> str   "redis://127.0.0.1:<port>/0"
#
# A service that cannot start FAILS the tests that need it (never skips).
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
    """``TRUEMEM_TEST_REDIS_URL`` if set, else the URL of the ``redis_server`` fixture."""
    external = os.environ.get(services.REDIS_URL_ENV)
    if external:
        return external
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


# =========================================================================== #
# TrueMem stores, one fresh database per test, on every backend.
#
#   backend   "sqlite" | "postgres"       (parametrises every test using a store)
#   tmp_url   (function) -> str            URL of an empty database of that backend
#   memory    (function) -> TrueMem        a TrueMem on tmp_url, closed after the test
# =========================================================================== #

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def tmp_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'truemem.db'}"
        return
    admin = services.sqlalchemy_url(request.getfixturevalue("postgres_url"), database="postgres")
    name = f"truemem_t_{secrets.token_hex(6)}"
    services.create_database(admin, name)
    try:
        yield services.sqlalchemy_url(admin, database=name)
    finally:
        services.drop_database(admin, name)


@pytest.fixture
def memory(tmp_url: str) -> Iterator[TrueMem]:
    with TrueMem(tmp_url) as store:
        yield store
