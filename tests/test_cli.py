"""The ``truemem`` command line, run in-process against a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truemem_core._demo import run_demo
from truemem_core.cli import main


def test_demo_second_model_knows_the_user(tmp_path: Path) -> None:
    lines: list[str] = []
    assert run_demo(str(tmp_path / "demo.db"), out=lines.append)
    output = "\n".join(lines)
    assert "claude-sonnet" in output and "gpt-4o" in output
    assert "name ✓, role ✓, preference ✓, allergy ✓" in output
    assert "[5] explicit  Prefers bullet points" in output
    assert "timings (ms): embed" in output


def test_memories_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "cli.db")]
    assert main([*db, "memories", "add", "--user", "ana", "Lives in Lisbon",
                 "--importance", "4"]) == 0
    memory_id = capsys.readouterr().out.split()[0]
    assert main([*db, "memories", "list", "--user", "ana", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(m["id"], m["text"], m["importance"]) for m in listed] == [
        (memory_id, "Lives in Lisbon", 4)]
    assert main([*db, "memories", "edit", "--user", "ana", memory_id,
                 "--text", "Lives in Porto"]) == 0
    assert main([*db, "memories", "show", "--user", "ana", memory_id]) == 0
    shown = capsys.readouterr().out
    assert "Lives in Porto" in shown and "updated" in shown
    assert main([*db, "memories", "search", "--user", "ana", "home city"]) == 0
    assert "Lives in Porto" in capsys.readouterr().out
    export = tmp_path / "ana.json"
    assert main([*db, "user", "export", "--user", "ana", "-o", str(export)]) == 0
    assert main([*db, "user", "import", "--user", "ben", str(export)]) == 0
    assert main([*db, "memories", "delete", "--user", "ana", memory_id]) == 0
    assert main([*db, "user", "erase", "--user", "ben", "--yes"]) == 0
    capsys.readouterr()
    assert main([*db, "memories", "list", "--user", "ben"]) == 0
    assert capsys.readouterr().out == ""


def test_errors_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "cli.db")]
    assert main([*db, "memories", "show", "--user", "ana", "nope"]) == 2
    assert capsys.readouterr().err.startswith("truemem: error: no memory 'nope'")
    assert main([*db, "memories", "add", "--user", "ana", "  "]) == 2
    assert "empty" in capsys.readouterr().err


def test_worker_without_redis_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUEMEM_REDIS_URL", raising=False)
    with pytest.raises(SystemExit, match="needs a Redis broker"):
        main(["worker"])
