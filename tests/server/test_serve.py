"""`truemem serve` in a real process on a loopback port, and the `truemem keys` commands."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import db_access
import httpx
import pytest
from sqlalchemy import select

from truemem_core.cli import main
from truemem_core.storage.schema import api_keys


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
    made = _truemem("--database", store_url, "keys", "create", "--tenant", "acme")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "truemem_core.cli", "serve", "--database", store_url,
         "--host", "127.0.0.1", "--port", str(port), "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "TRUEMEM_REDIS_URL": ""})
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, server.communicate()[0]
            assert time.monotonic() < deadline, "the server did not become ready"
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        auth = {"Authorization": f"Bearer {key}"}
        added = httpx.post(f"{base}/v1/users/ana/memories", headers=auth,
                           json={"text": "Rides a red bicycle"}, timeout=60)
        assert added.status_code == 201, added.text
        found = httpx.post(f"{base}/v1/search", headers=auth, timeout=60,
                           json={"user_id": "ana", "query": "bicycle"})
        assert found.json()[0]["memory"]["text"] == "Rides a red bicycle"
        assert httpx.get(f"{base}/v1/users/ana/memories").status_code == 401
    finally:
        server.send_signal(signal.SIGINT)
        output = server.communicate(timeout=60)[0]
    assert server.returncode == 0, output
    assert "Traceback" not in output


def test_keys_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "keys.db")]
    assert main([*db, "keys", "list"]) == 2  # no store yet: listing does not create one
    assert "no TrueMem store" in capsys.readouterr().err
    assert main([*db, "keys", "create", "--tenant", "acme", "--user", "ana", "--read-only",
                 "--name", "ana's phone"]) == 0
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
