"""The ``truemem`` command line, run in-process against a real SQLite file."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from truemem_core import TrueMem
from truemem_core.cli import main
from truemem_core.cli.demo import run_demo

DEAD_REDIS = ["--redis-url", "redis://127.0.0.1:1/0"]  # validation fails before any connection


class TinyEmbedder:
    """A deterministic 8-dimensional embedder: a store made with another model than the CLI's."""

    model_name = "tiny-test-embedder"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8)
                for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), 8) + 1.0


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of a failed command (and no traceback)."""
    err = capsys.readouterr().err
    assert err.startswith("truemem: error: "), err
    assert "Traceback" not in err
    return err


def test_demo_second_model_knows_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a production broker in the environment is no worker of the demo's own store
    monkeypatch.setenv("TRUEMEM_REDIS_URL", "redis://127.0.0.1:1/0")
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
    assert main([*db, "memories", "add", "--user", "ana", "  "]) == 2
    assert "empty" in _error(capsys)
    assert main([*db, "memories", "add", "--user", "ana", "Lives in Lisbon"]) == 0
    capsys.readouterr()
    assert main([*db, "memories", "show", "--user", "ana", "nope"]) == 2
    assert _error(capsys).startswith("truemem: error: no memory 'nope'")
    assert main([*db, "memories", "edit", "--user", "ana", "nope"]) == 2
    assert "give --text and/or --importance" in _error(capsys)


@pytest.mark.parametrize("database", ["", "::::not a url"])
def test_a_bad_database_url_is_one_clear_line(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database", database, "memories", "list", "--user", "ana"]) == 2
    assert "database" in _error(capsys)


@pytest.mark.parametrize("command", [
    ["memories", "list", "--user", "ana"],
    ["memories", "show", "--user", "ana", "some-id"],
    ["memories", "search", "--user", "ana", "city"],
    ["memories", "edit", "--user", "ana", "some-id", "--text", "x"],
    ["memories", "delete", "--user", "ana", "some-id"],
    ["user", "export", "--user", "ana"],
    ["user", "erase", "--user", "ana", "--yes"],
    ["maintain", "--user", "ana"],
    ["reembed"],
])
def test_commands_on_existing_data_never_create_a_store(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "mistyped" / "dir" / "x.db"
    assert main(["--database", str(missing), *command]) == 2
    assert f"no TrueMem store at {missing}" in _error(capsys)
    assert not (tmp_path / "mistyped").exists()


@pytest.mark.parametrize("kind", ["empty file", "another application's database", "not SQLite"])
def test_commands_on_existing_data_leave_a_file_without_a_store_as_it_was(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = tmp_path / "app.db"
    if kind == "empty file":
        found.touch()
    elif kind == "not SQLite":
        found.write_text("hello")
    else:
        with contextlib.closing(sqlite3.connect(found)) as conn:
            conn.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")
    before = found.read_bytes()
    for command in (["memories", "list", "--user", "ana"], ["user", "export", "--user", "ana"]):
        assert main(["--database", str(found), *command]) == 2
        assert f"no TrueMem store at {found}" in _error(capsys)
    assert found.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_dry_run_import_creates_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "mem0.json"
    records.write_text(json.dumps([{"id": "m1", "memory": "Enjoys sailing", "user_id": "q"}]))
    missing = tmp_path / "new" / "x.db"
    assert main(["--database", str(missing), "import", "--from", "mem0", str(records),
                 "--dry-run"]) == 0
    assert "1 would be imported" in capsys.readouterr().out
    assert not (tmp_path / "new").exists()


def test_an_import_with_a_time_no_store_can_hold_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "mem0.json"
    records.write_text(json.dumps([
        {"id": "m1", "memory": "Enjoys sailing", "user_id": "q"},
        {"id": "m2", "memory": "Likes brie", "user_id": "q",
         "created_at": "9999-12-31T23:59:59-05:00"}]))
    db = ["--database", str(tmp_path / "x.db")]
    assert main([*db, "memories", "add", "--user", "q", "Lives in Lisbon"]) == 0
    capsys.readouterr()
    assert main([*db, "import", "--from", "mem0", str(records)]) == 2
    assert "record 2 created_at is out of range" in _error(capsys)
    with TrueMem(str(tmp_path / "x.db")) as memory:
        assert [m.text for m in memory.list_memories("q")] == ["Lives in Lisbon"]


def test_a_database_url_with_a_bad_port_is_one_clear_line(
    capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://u@127.0.0.1:notaport/x"
    assert main(["--database", url, "memories", "list", "--user", "ana"]) == 2
    assert "not a database URL" in _error(capsys)


@pytest.mark.parametrize(("flags", "expected"), [
    (["--redis-url", "http://nope"], "not a Redis URL"),
    (["--port", "99999"], "--port must be from 0 to 65535"),
])
def test_serve_refuses_what_its_workers_could_not_use(
    flags: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database", str(tmp_path / "x.db"), "serve", *flags]) == 2
    assert expected in _error(capsys)


def test_writing_commands_create_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "export.json"
    source = ["--database", str(tmp_path / "source.db")]
    assert main([*source, "memories", "add", "--user", "ana", "Lives in Lisbon"]) == 0
    assert main([*source, "user", "export", "--user", "ana", "-o", str(export)]) == 0
    fresh = tmp_path / "new" / "restored.db"
    assert main(["--database", str(fresh), "user", "import", "--user", "ana",
                 str(export)]) == 0
    assert "imported 1 memories" in capsys.readouterr().out
    assert fresh.is_file()


def test_a_directory_is_not_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--database", str(tmp_path), "memories", "list", "--user", "ana"]) == 2
    assert "no TrueMem store at" in _error(capsys)


@pytest.mark.parametrize(("content", "expected"), [
    (None, "cannot read"),
    (b"name,city\nana,Lisbon\n", "not JSON"),
    (b"\xff\xfe not text", "not UTF-8 text"),
    (b"[1, 2]", "not a TrueMem export"),
])
def test_import_of_a_bad_file_is_one_clear_line(
    content: bytes | None, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "ana.json"
    if content is not None:
        source.write_bytes(content)
    assert main(["--database", str(tmp_path / "cli.db"), "user", "import", "--user", "ana",
                 str(source)]) == 2
    error = _error(capsys)
    assert expected in error
    assert error.count(str(source)) <= 1  # one error, not wrapped in another about the file


def test_import_of_a_directory_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database", str(tmp_path / "cli.db"), "user", "import", "--user", "ana",
                 str(tmp_path)]) == 2
    assert "cannot read" in _error(capsys)


def test_export_to_an_unwritable_path_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database", str(tmp_path / "cli.db")]
    assert main([*db, "memories", "add", "--user", "ana", "Lives in Lisbon"]) == 0
    target = tmp_path / "no" / "such" / "dir" / "ana.json"
    assert main([*db, "user", "export", "--user", "ana", "-o", str(target)]) == 2
    assert "cannot write" in _error(capsys)


def test_erase_without_yes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(tmp_path / "cli.db")]
    assert main([*db, "memories", "add", "--user", "ana", "Lives in Lisbon"]) == 0
    assert main([*db, "user", "erase", "--user", "ana"]) == 2
    assert "--yes" in _error(capsys)
    assert main([*db, "memories", "list", "--user", "ana"]) == 0
    assert "Lives in Lisbon" in capsys.readouterr().out


def test_reembed_after_switching_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database", str(tmp_path / "store.db")]
    with TrueMem(tmp_path / "store.db", embedder=TinyEmbedder()) as store:
        store.add_memory("ana", "Lives in Lisbon")
        store.add_memory("ana", "Plays the cello in an orchestra")
    # the CLI embeds with the default model: the store refuses it and names the way out
    assert main([*db, "memories", "search", "--user", "ana", "cello"]) == 2
    error = _error(capsys)
    assert "tiny-test-embedder" in error and "truemem reembed" in error
    assert main([*db, "reembed"]) == 0
    done = capsys.readouterr()
    assert "re-embedded 2 vectors" in done.out
    assert "2/2" in done.err  # the progress bar's last state
    assert main([*db, "memories", "search", "--user", "ana", "cello", "-k", "1"]) == 0
    assert "Plays the cello" in capsys.readouterr().out


def test_maintain_prints_state_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TrueMem(tmp_path / "store.db") as store:
        dog = store.add_memory("ana", "Has a golden retriever named Max", importance=2)
        store.add_memory("ben", "Lives in Lisbon")
        for _ in range(2):
            store.feedback("ana", dog.id, "irrelevant")
    assert main(["--database", str(tmp_path / "store.db"), "maintain",
                 "--user", "ana", "--user", "ben"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [f"{dog.id}  ephemeral  ana"]
    assert "1 memory of user 'ana' changed state" in out.err
    assert "0 memories of user 'ben' changed state" in out.err


def test_worker_without_redis_explains(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TRUEMEM_REDIS_URL", raising=False)
    assert main(["worker"]) == 2
    assert "needs a Redis broker" in _error(capsys)


@pytest.mark.parametrize(("flags", "expected"), [
    (["--llm", "nosuch_module_for_truemem:build"], "cannot import 'nosuch_module_for_truemem'"),
    (["--llm", "json:no_such_factory"], "has no attribute 'no_such_factory'"),
    (["--llm", "myapp.llms"], "--llm takes module:attribute"),
    (["--processes", "0"], "--processes must be at least 1"),
    (["--processes", "-3"], "--processes must be at least 1"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--give-up-after", "-1"], "--give-up-after must be"),
])
def test_worker_rejects_bad_flags(
    flags: list[str], expected: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("TRUEMEM_REDIS_URL", raising=False)
    assert main(["worker", *DEAD_REDIS, *flags]) == 2
    assert expected in _error(capsys)


@pytest.mark.parametrize("url", ["notaurl", "http://localhost:6379", "redis://host:port/0"])
def test_worker_rejects_a_bad_redis_url(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--redis-url", url]) == 2
    assert "not a Redis URL" in _error(capsys)


def test_worker_rejects_a_bad_give_up_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRUEMEM_WORKER_GIVE_UP_AFTER", "soon")
    assert main(["worker", *DEAD_REDIS]) == 2
    assert "TRUEMEM_WORKER_GIVE_UP_AFTER" in _error(capsys)


def test_a_closed_pipe_is_not_an_error(tmp_path: Path) -> None:
    """``truemem memories list … | head``: the reader may leave first (a real process)."""
    db = str(tmp_path / "cli.db")
    assert main(["--database", db, "memories", "add", "--user", "ana", "Lives in Lisbon"]) == 0
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "truemem_core.cli", "--database", db,
             "memories", "list", "--user", "ana"],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(write)
    assert done.returncode == 1
    assert "Error" not in done.stderr and "Traceback" not in done.stderr
