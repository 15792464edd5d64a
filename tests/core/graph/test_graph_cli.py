"""``truemem graph show|why|export``, run in-process on both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from truemem_core import RelationSpec, TrueMem
from truemem_core.cli import main

MARCH_1 = datetime(2026, 3, 1, tzinfo=UTC)
APRIL_1 = datetime(2026, 4, 1, tzinfo=UTC)


@pytest.fixture
def store(store_url: str) -> str:
    with TrueMem(store_url) as memory:
        memory.graph.add_entities("ana", [{"name": "db-1", "entityType": "server",
                                           "observations": ["Runs in Frankfurt"]}])
        memory.graph.add_relations("ana", [
            RelationSpec("db-1", "runs", "PostgreSQL 14", valid_from=MARCH_1),
            RelationSpec("db-1", "runs", "PostgreSQL 16", valid_from=APRIL_1,
                         replaces="PostgreSQL 14"),
            RelationSpec("outage", "led_to", "PostgreSQL 16", evidence="post-mortem of 2 March"),
            RelationSpec("slow disks", "caused", "outage"),
        ])
    return store_url


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_show(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", store, "graph", "show", "--user", "ana"]
    now = _out(capsys, *db, "--entity", "DB-1")
    assert "db-1 (server)" in now and "  - Runs in Frankfurt" in now
    assert "db-1 --runs--> PostgreSQL 16" in now and "PostgreSQL 14" not in now
    march = _out(capsys, *db, "--entity", "db-1", "--valid-at", "2026-03-15")
    assert "db-1 --runs--> PostgreSQL 14  [2026-03-01T00:00+00:00 → 2026-04-01T00:00+00:00]" \
        in march
    assert _out(capsys, *db).splitlines()[-1] == "5 entities, 1 observations, 3 relations"


def test_why(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "--database", store, "graph", "why", "--user", "ana", "postgresql 16")
    assert out.splitlines()[0] == "why PostgreSQL 16:"
    assert "  outage --led_to--> PostgreSQL 16" in out and "post-mortem of 2 March" in out
    assert "    slow disks --caused--> outage" in out


def test_export(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "graph.json"
    _out(capsys, "--database", store, "graph", "export", "--user", "ana", "-o", str(target))
    data = json.loads(target.read_text(encoding="utf-8"))
    [server] = [e for e in data["entities"] if e["name"] == "db-1"]
    assert (server["entityType"], server["observations"]) == ("server", ["Runs in Frankfurt"])
    assert [(r["from"], r["relationType"], r["to"]) for r in data["relations"]
            if r["from"] == "db-1"] == [("db-1", "runs", "PostgreSQL 16")]
    assert all(r["recordedAt"] for r in data["relations"])


def test_errors_are_one_line(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--database", store, "graph", "why", "--user", "ana", "nothing"]) == 2
    err = capsys.readouterr().err
    assert err == "truemem: error: no entity 'nothing' for this user\n"
    assert main(["--database", store, "graph", "why", "--user", "ana", "outage",
                 "--depth", "99"]) == 2
    assert capsys.readouterr().err.startswith("truemem: error: depth must be")
