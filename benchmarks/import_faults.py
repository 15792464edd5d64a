"""Fault scenarios of ``truemem import``: kill -9 mid-import then the same command again,
and two runs of one file at once, each compared with one uninterrupted import.

    python benchmarks/import_faults.py --database sqlite:///tmp/x.db --records 400

Both scenarios run real ``truemem import`` processes on a synthetic mem0 export (with
restatements across batches and noise for admission control) and import it twice into
one store under two user ids: once whole (``--user whole``), once the faulty way. What
the two users end with is compared memory by memory (text, creation time, state after
``maintain``, reinforcements), by history events (action counts) and by store items
(key and the text of the memory each indexes); ``differences`` counts what one has and
the other has not. ``benchmarks/faults.py`` calls ``kill_mid_import`` and
``concurrent_imports``; ``tests/faults/test_import_restart.py`` asserts they give 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, create_engine, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from truemem_core import TrueMem
from truemem_core.storage.schema import memories, memory_events, store_items

PATIENCE_S = 600  # bounds a hang only
SUBJECTS = ["jazz", "chess", "rowing", "pottery", "Rust", "tango", "birdwatching", "sushi",
            "climbing", "opera", "sailing", "knitting", "Go", "poetry", "cycling", "baking"]
PLACES = ["Porto", "Lyon", "Osaka", "Quito", "Tartu", "Perth", "Bergen", "Cusco", "Leeds",
          "Graz", "Split", "Turku", "Davao", "Bilbao", "Malmo", "Kyoto"]


def mem0_export(path: Path, count: int) -> Path:
    """A mem0 ``get_all()`` export of ``count`` records of one user: distinct facts, every
    fifth one a restatement of a fact 37 records earlier (so in an earlier batch), every
    eleventh noise that admission control rejects; times one hour apart, in file order."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    results = []
    for n in range(count):
        if n % 11 == 10:
            said = "ok"
        elif n % 5 == 4 and n >= 37:
            said = results[n - 37]["memory"]
        else:
            said = (f"Enjoys {SUBJECTS[n % len(SUBJECTS)]} with a friend from "
                    f"{PLACES[n // len(SUBJECTS) % len(PLACES)]} (club {n})")
        at = start + timedelta(hours=n)
        results.append({"id": f"mem0-{n:05d}", "memory": said, "user_id": "someone",
                        "created_at": at.isoformat(), "updated_at": at.isoformat()})
    path.write_text(json.dumps({"results": results}), encoding="utf-8")
    return path


def command(url: str, export: Path, user: str, batch_size: int) -> list[str]:
    return [sys.executable, "-m", "truemem_core.cli", "--database", url, "import", "--from",
            "mem0", str(export), "--user", user, "--batch-size", str(batch_size)]


def start(url: str, export: Path, user: str, batch_size: int) -> subprocess.Popen[str]:
    # this interpreter's path: the child runs the same truemem as the caller
    return subprocess.Popen(command(url, export, user, batch_size), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """The exit code and stderr of a run (stderr without the progress bar's lines)."""
    _, err = process.communicate(timeout=PATIENCE_S)
    return process.returncode, "\n".join(line for line in err.splitlines()
                                         if line.strip() and not line.startswith("importing"))


def sync_url(url: str) -> str:
    parsed = make_url(url)
    driver = "sqlite" if parsed.get_backend_name() == "sqlite" else "postgresql+psycopg"
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


@contextmanager
def writers_held(url: str) -> Iterator[Connection]:
    """A transaction that keeps every import from committing a batch until it ends
    (SQLite: the write lock; PostgreSQL: a SHARE lock on store_items, which each batch
    writes last), on a connection of its own, for reading the store meanwhile."""
    engine = create_engine(sync_url(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.execute(text("BEGIN"))
                conn.execute(text("LOCK TABLE store_items IN SHARE MODE"))
            try:
                yield conn
            finally:
                conn.rollback()
    finally:
        engine.dispose()


def memories_of(conn: Connection, user: str) -> int:
    return int(conn.execute(select(func.count()).select_from(memories).where(
        memories.c.user_id == user)).scalar_one())


def waiting(conn: Connection) -> int:
    """How many transactions of this PostgreSQL database wait for a lock."""
    return int(conn.execute(text(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
        "WHERE NOT l.granted AND d.datname = current_database()")).scalar_one())


def snapshot(url: str, user: str) -> Counter[Any]:
    """What an import left for ``user``, as a multiset of comparable facts."""
    with TrueMem(url, preload=False) as memory:
        memory.admin.maintain(user)  # states after the lifecycle, which reads created_at
    engine = create_engine(sync_url(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(
                memories.c.id, memories.c.text, memories.c.created_at, memories.c.state,
                memories.c.reinforcements).where(memories.c.user_id == user)).all()
            texts = {row.id: row.text for row in rows}
            found: Counter[Any] = Counter(
                ("memory", row.text, row.created_at.isoformat(), row.state, row.reinforcements)
                for row in rows)
            found.update(("event", action) for (action,) in conn.execute(
                select(memory_events.c.action).where(memory_events.c.user_id == user)))
            found.update(("item", key, texts.get(memory_id)) for key, memory_id in conn.execute(
                select(store_items.c.key, store_items.c.memory_id).where(
                    store_items.c.user_id == user)))
            return found
    finally:
        engine.dispose()


def differences(a: Counter[Any], b: Counter[Any]) -> int:
    return sum(((a - b) + (b - a)).values())


def whole_import(url: str, export: Path, batch_size: int) -> Counter[Any]:
    code, err = finish(start(url, export, "whole", batch_size))
    if code != 0:
        raise RuntimeError(f"the uninterrupted import failed ({code}): {err}")
    return snapshot(url, "whole")


def kill_mid_import(
    url: str, workdir: Path, *, records: int = 400, batch_size: int = 4
) -> tuple[int, int]:
    """Import a synthetic export whole, then again under another user killed with SIGKILL
    once its first memories are committed (seen while the store is held, so the kill
    lands mid-import), and the same command again. Returns (differences between the
    two users' stores, memories there were at the kill)."""
    export = mem0_export(workdir / "kill-mid-import.json", records)
    whole = whole_import(url, export, batch_size)
    doomed = start(url, export, "killed", batch_size)
    try:
        committed = 0
        while not committed:
            time.sleep(0.05)  # the import's turn to commit a batch
            with writers_held(url) as conn:  # held, so no batch can commit past the count
                if doomed.poll() is not None:
                    raise RuntimeError(f"the import ended before the kill: {finish(doomed)}")
                committed = memories_of(conn, "killed")
                if committed:
                    doomed.send_signal(signal.SIGKILL)
                    doomed.wait(timeout=PATIENCE_S)
    finally:
        if doomed.poll() is None:
            doomed.kill()
        doomed.communicate(timeout=PATIENCE_S)
    code, err = finish(start(url, export, "killed", batch_size))
    if code != 0:
        raise RuntimeError(f"the import run again failed ({code}): {err}")
    return differences(whole, snapshot(url, "killed")), committed


def concurrent_imports(
    url: str, workdir: Path, *, records: int = 200, batch_size: int = 4, runs: int = 2
) -> tuple[int, list[str]]:
    """Import a synthetic export whole, then ``runs`` runs of it at once under another
    user, all started while the store is held. Returns (differences between the two
    users' stores, what the runs that failed wrote on stderr)."""
    export = mem0_export(workdir / "concurrent-imports.json", records)
    whole = whole_import(url, export, batch_size)
    with writers_held(url) as conn:
        racing = [start(url, export, "raced", batch_size) for _ in range(runs)]
        # PostgreSQL shows the runs waiting: then each has read what it is to import
        # before any batch of the others committed (SQLite's wait is not visible)
        while (conn.dialect.name == "postgresql" and waiting(conn) < runs
               and all(r.poll() is None for r in racing)):
            time.sleep(0.05)
    failed = [f"exit {code}: {err}" for code, err in map(finish, racing)
              if code != 0 or err]
    return differences(whole, snapshot(url, "raced")), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="a store URL (default: a SQLite file in a "
                        "temporary directory); give a fresh one")
    parser.add_argument("--records", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="truemem-import-faults-") as workdir:
        url = args.database or f"sqlite:///{Path(workdir) / 'store.db'}"
        diff, committed = kill_mid_import(url, Path(workdir), records=args.records,
                                          batch_size=args.batch_size)
        print(f"kill -9 mid-import ({args.records} records, killed with {committed} "
              f"memories committed) then again: {diff} differences from one uninterrupted import")
        diff, failed = concurrent_imports(url, Path(workdir), records=args.records,
                                          batch_size=args.batch_size)
        print(f"2 imports of one file at once: {diff} differences from one import, "
              f"{len(failed)} runs failed" + "".join(f"\n  {f}" for f in failed))


if __name__ == "__main__":
    main()
