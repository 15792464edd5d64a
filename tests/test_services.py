"""The test services themselves: embedded PostgreSQL with pgvector, and Redis."""

from __future__ import annotations

import os

import psycopg
import pytest
import redis
import services
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine


def test_postgres_url_is_a_fresh_database_with_pgvector(postgres_url: str) -> None:
    assert postgres_url.startswith("postgresql+psycopg://")
    with psycopg.connect(services.libpq_url(postgres_url)) as conn:
        database = conn.execute("SELECT current_database()").fetchone()
        assert database is not None
        assert database[0].startswith("truemem_test_")

        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        assert version is not None
        assert version[0]

        distance = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
        assert distance is not None
        assert distance[0] == pytest.approx(1.0)


def test_postgres_has_pg_trgm(postgres_url: str) -> None:
    with psycopg.connect(services.libpq_url(postgres_url)) as conn:
        row = conn.execute(
            "SELECT similarity('certbot renewal', 'certbot renewl'), "
            "similarity('certbot renewal', 'peanut allergy')"
        ).fetchone()
    assert row is not None
    close, far = row
    assert close > 0.5 > far


async def test_postgres_url_works_with_sqlalchemy_async(postgres_url: str) -> None:
    engine = create_async_engine(postgres_url)
    try:
        async with engine.connect() as conn:
            distance = await conn.scalar(text("SELECT '[3,4]'::vector <-> '[0,0]'::vector"))
    finally:
        await engine.dispose()
    assert distance == pytest.approx(5.0)


def test_bad_external_database_url_fails_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = services.free_port()
    monkeypatch.setenv(services.DATABASE_URL_ENV, f"postgresql://nobody@127.0.0.1:{port}/postgres")
    with pytest.raises(services.ServiceError, match="cannot create database"):  # noqa: SIM117
        with services.postgres_database():
            pass


def test_redis_survives_stop_and_restart(redis_server: services.RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url, socket_timeout=2, socket_connect_timeout=2)
    try:
        assert client.ping()
        client.set("truemem:probe", "1")
        port = redis_server.port

        redis_server.stop()
        assert not redis_server.running
        with pytest.raises(redis.ConnectionError):
            client.ping()

        redis_server.restart()
        assert redis_server.port == port
        assert client.ping()
        assert client.get("truemem:probe") is None  # no persistence: restarts empty
    finally:
        client.close()


def test_redis_stopped_block_restarts_the_server(redis_server: services.RedisServer) -> None:
    with redis_server.stopped():
        assert not redis_server.ping()
    assert redis_server.ping()


def test_redis_url(redis_url: str, redis_server: services.RedisServer) -> None:
    if not os.environ.get(services.REDIS_URL_ENV):
        assert redis_url == redis_server.url
    client = redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
    try:
        assert client.ping()
    finally:
        client.close()


def test_redis_on_a_taken_port_fails_with_the_server_log(
    redis_server: services.RedisServer,
) -> None:
    clash = services.RedisServer(port=redis_server.port, startup_timeout=5)
    try:
        with pytest.raises(services.ServiceError, match="redis-server exited"):
            clash.start()
    finally:
        clash.close()
    assert redis_server.ping()


def test_failure_message_has_a_fix_only_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert "How to fix" not in services.failure_message("Redis", "boom", "do this")
    monkeypatch.delenv("CI")
    message = services.failure_message("Redis", "boom", "do this")
    assert "boom" in message
    assert "How to fix: do this" in message


def test_each_xdist_worker_has_its_own_database_of_an_external_redis() -> None:
    assert services.worker_redis_url("redis://127.0.0.1:6379/0", 0) == "redis://127.0.0.1:6379/0"
    assert services.worker_redis_url("redis://h:6379", 1) == "redis://h:6379/1"
    assert (services.worker_redis_url("rediss://:pw@h:6380/5?ssl_cert_reqs=none", 2)
            == "rediss://:pw@h:6380/7?ssl_cert_reqs=none")


def test_the_worker_number_comes_from_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert services.xdist_worker() == 3
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert services.xdist_worker() == 0
