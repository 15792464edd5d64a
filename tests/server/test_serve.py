"""`truemem serve` in a real process on a loopback port, and the `truemem keys` commands."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import db_access
import httpx
import pytest
from sqlalchemy import select

from truemem_core.cli import main
from truemem_server.key_table import api_keys


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _truemem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "truemem_core.cli", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_truemem_serve_answers_on_loopback(tmp_path: Path) -> None:
    """Two uvicorn workers on an SQLite store (the embedded mode; the API tests run on both)."""
    store_url = f"sqlite:///{tmp_path / 'served.db'}"
    auth = {"Authorization": f"Bearer {_key(store_url)}"}
    with serving(store_url, "--workers", "2") as (base, _):
        added = httpx.post(f"{base}/v1/users/ana/memories", headers=auth,
                           json={"text": "Rides a red bicycle"}, timeout=60)
        assert added.status_code == 201, added.text
        found = httpx.post(f"{base}/v1/search", headers=auth, timeout=60,
                           json={"user_id": "ana", "query": "bicycle"})
        assert found.json()[0]["memory"]["text"] == "Rides a red bicycle"
        assert httpx.get(f"{base}/v1/users/ana/memories").status_code == 401


@contextlib.contextmanager
def serving(store_url: str, *flags: str, stderr: int | IO[str] = subprocess.STDOUT
            ) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`truemem serve` (one process) on a free loopback port, once ready: its URL and
    process; stopped with SIGINT at the end."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "truemem_core.cli", "serve", "--database", store_url,
         "--host", "127.0.0.1", "--port", str(port), *flags],
        stdout=subprocess.PIPE, stderr=stderr, text=True,
        env={**os.environ, "TRUEMEM_REDIS_URL": ""})
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "the server did not become ready"
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield base, server
    finally:
        server.send_signal(signal.SIGINT)
        output = server.communicate(timeout=60)[0]
    assert server.returncode == 0, output
    assert "Traceback" not in (output or "")


def _memory_kib(pid: int, field: str) -> int:
    """``VmRSS`` or ``VmHWM`` (the peak) of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def _key(store_url: str, *scope: str) -> str:
    made = _truemem("--database", store_url, "keys", "create", "--tenant", "acme",
                    "--new-store", *scope)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


BIG = 48 * 2**20  # an export-sized body, under the 64 MiB import limit


def _post_head(path: str, length: int, key: str | None = None) -> bytes:
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    return (f"POST {path} HTTP/1.1\r\nHost: truemem\r\nContent-Type: application/json\r\n"
            f"{auth}Content-Length: {length}\r\n\r\n").encode()


def _answer_before_the_body(base: str, head: bytes) -> bytes:
    """Send a request's head and the first MiB of its body, then read the answer: one
    that waits for the rest of the body never comes (the socket's guard fails it)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.settimeout(60)
        sock.sendall(head + b"[" + b"0," * 2**19)
        answer = sock.recv(65536)
        with contextlib.suppress(OSError):  # the server closed: it wants none of the rest
            for _ in range(BIG // 2**20):
                sock.sendall(b"0," * 2**19)
    return answer


def test_a_body_is_not_read_before_the_key_and_its_scope_are_checked(tmp_path: Path) -> None:
    """An unauthenticated 48 MiB import is answered 401 from its head, the connection
    closed, and the server's memory does not grow (it grew by about a gigabyte)."""
    store_url = f"sqlite:///{tmp_path / 'served.db'}"
    other_user = _key(store_url, "--user", "ben")
    read_only = _key(store_url, "--read-only")
    with serving(store_url) as (base, server):
        peak = _memory_kib(server.pid, "VmHWM")
        refusals = [
            (_post_head("/v1/users/x/import", BIG), b"401"),
            (_post_head("/v1/users/x/import", BIG, "tm_0123456789abcdef_" + "x" * 43), b"401"),
            (_post_head("/v1/users/x/import", BIG, other_user), b"403"),
            (_post_head("/v1/users/x/import", BIG, read_only), b"403"),
            (_post_head("/v1/context", BIG, read_only), b"403"),
            (_post_head("/v1/search", BIG), b"401"),
        ]
        for head, status in refusals:
            answer = _answer_before_the_body(base, head)
            assert answer.startswith(b"HTTP/1.1 " + status), (head, answer[:200])
            assert b"connection: close" in answer.lower()
        assert httpx.get(f"{base}/healthz").status_code == 200
        grown = _memory_kib(server.pid, "VmHWM") - peak
        assert grown < 16 * 1024, f"the server's peak memory grew by {grown} KiB"


def test_body_limits_are_set_from_the_command_line(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'served.db'}"
    auth = {"Authorization": f"Bearer {_key(store_url)}"}
    with serving(store_url, "--max-body-bytes", "2000", "--max-import-bytes", "20000") as (
            base, _):
        said = {"user_id": "ana", "session_id": "s", "user_message": "x" * 3000,
                "assistant_message": "ok"}
        over = httpx.post(f"{base}/v1/record", headers=auth, json=said, timeout=60)
        assert over.status_code == 413, over.text
        assert over.json()["error"]["type"] == "PayloadTooLargeError"
        document = {"format": "truemem.user/1", "memories": [], "user_id": "x" * 10_000}
        taken = httpx.post(f"{base}/v1/users/ana/import", headers=auth, json=document,
                           timeout=60)
        assert taken.status_code == 201, taken.text  # the import route's own limit
        too_big = httpx.post(f"{base}/v1/users/ana/import", headers=auth, timeout=60,
                             json={**document, "user_id": "x" * 30_000})
        assert too_big.status_code == 413
        # a path that only ends like the import route gets the ordinary limit
        change = httpx.patch(f"{base}/v1/users/ana/memories/import", headers=auth,
                             json={"text": "x" * 10_000}, timeout=60)
        assert change.status_code == 413, change.text
    refused = _truemem("--database", store_url, "serve", "--max-body-bytes", "lots")
    assert refused.returncode == 2
    assert "TRUEMEM_MAX_BODY_BYTES must be a positive number of bytes" in refused.stderr


def test_the_server_log_is_one_json_object_a_line(tmp_path: Path) -> None:
    """stderr to a pipe: uvicorn's records, TrueMem's and the MCP SDK's, none wrapped."""
    store_url = f"sqlite:///{tmp_path / 'served.db'}"
    auth = {"Authorization": f"Bearer {_key(store_url)}"}
    log = tmp_path / "server.log"
    with log.open("w") as stderr, serving(store_url, stderr=stderr) as (base, _):
        assert httpx.get(f"{base}/v1/users/ana/memories").status_code == 401
        assert httpx.get(f"{base}/v1/users/ana/memories", headers=auth,
                         timeout=60).status_code == 200
        mcp = httpx.post(f"{base}/mcp", timeout=60, headers={**auth, "X-TrueMem-User": "ana",
                                                 "Accept": "application/json, text/event-stream"},
                         json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                             "name": "delete_memory", "arguments": {"memory_id": "x" * 300}}})
        assert mcp.status_code == 200, mcp.text
    lines = log.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert [(r["method"], r["status"]) for r in access if r["path"].startswith("/v1/")] == [
        ("GET", 401), ("GET", 200)]
    assert any(r["logger"] == "uvicorn.error" and "Started server" in r["message"]
               for r in records)


def test_keys_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "keys.db")]
    assert main([*db, "keys", "list"]) == 2  # no store yet: listing does not create one
    assert "no TrueMem store" in capsys.readouterr().err
    assert main([*db, "keys", "create", "--tenant", "acme"]) == 2  # nor does creating a key
    assert "--new-store creates one" in capsys.readouterr().err
    assert not (tmp_path / "keys.db").exists()
    assert main([*db, "keys", "create", "--tenant", "acme", "--user", "ana", "--read-only",
                 "--name", "ana's phone", "--new-store"]) == 0
    out = capsys.readouterr()
    key = out.out.strip()
    assert key.startswith("tm_") and "not shown again" in out.err
    stored = db_access.rows(f"sqlite:///{tmp_path / 'keys.db'}", select(api_keys))
    assert len(stored) == 1 and key not in str(tuple(stored[0]))  # only its hash
    key_id = stored[0].id
    assert main([*db, "keys", "list", "--json"]) == 0
    listed = capsys.readouterr().out
    assert '"user": "ana"' in listed and '"read_only": true' in listed and key not in listed
    assert main([*db, "keys", "revoke", key_id]) == 0
    assert main([*db, "keys", "list"]) == 0
    assert "revoked" in capsys.readouterr().out
    assert main([*db, "keys", "create", "--tenant", "Not A Tenant"]) == 2
    assert "tenant must be" in capsys.readouterr().err
    assert main([*db, "keys", "create", "--tenant", "acme", "--user", "ana "]) == 2
    assert "space at its start or end" in capsys.readouterr().err
    assert main([*db, "keys", "revoke", "0000000000000000"]) == 2



def test_a_deleted_sqlite_file_is_not_served(tmp_path: Path) -> None:
    """The file removed under a running server: writes answered 201 and were lost,
    /readyz said ready, and ``keys create`` made a new store at the same path."""
    path = tmp_path / "served.db"
    auth = {"Authorization": f"Bearer {_key(f'sqlite:///{path}')}"}
    with serving(f"sqlite:///{path}") as (base, _):
        added = httpx.post(f"{base}/v1/users/ana/memories", headers=auth,
                           json={"text": "Rides a red bicycle"}, timeout=60)
        assert added.status_code == 201, added.text
        for leftover in tmp_path.glob("served.db*"):  # the file, its WAL and shared memory
            leftover.unlink()
        ready = httpx.get(f"{base}/readyz", timeout=60)
        assert ready.status_code == 503
        assert "deleted or replaced" in ready.json()["checks"]["database"]
        lost = httpx.post(f"{base}/v1/users/ana/memories", headers=auth,
                          json={"text": "Plays the cello"}, timeout=60)
        assert lost.status_code == 503, lost.text
        assert "deleted or replaced" in lost.text
    assert not path.exists()
    again = _truemem("--database", str(path), "keys", "create", "--tenant", "acme")
    assert again.returncode == 2
    assert "no TrueMem store" in again.stderr and "--new-store" in again.stderr
    assert not path.exists()


def test_on_a_terminal_a_record_is_one_plain_line() -> None:
    from truemem_server.logs import OneLine

    record = logging.LogRecord("truemem.server", logging.WARNING, __file__, 1,
                               "POST %s: %s", ("/v1/record", "first\nsecond"), None)
    line = OneLine(as_json=False).format(record)
    assert "\n" not in line
    assert line.endswith(" WARNING truemem.server: POST /v1/record: first\\nsecond")
