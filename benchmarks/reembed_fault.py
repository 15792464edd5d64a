"""A fault scenario: ``truemem reembed`` killed with SIGKILL midway, then run again.

``kill_mid_reembed(url)`` fills a new store with an old model's vectors (memories and
past messages), starts ``truemem reembed`` (the built-in model) in a process of its
own, kills it once some batches are committed, checks what the store names, runs the
command again to the end and counts what went wrong (``ReembedKill``: all zero /
False when the run is resumable). ``tests/faults/test_reembed_kill.py`` runs it on
both backends; ``benchmarks/faults.py`` may count it as one of its scenarios.

    python benchmarks/reembed_fault.py /tmp/store.db     # a new SQLite file, or a
    python benchmarks/reembed_fault.py postgresql://…    # PostgreSQL database
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from truemem_core import TrueMem
from truemem_core.embeddings import default_embedder, normalize
from truemem_core.memory.reembedding import TEXTS
from truemem_core.storage.database import resolve_url
from truemem_core.storage.schema import store_meta


class OldEmbedder:
    """The model the store was made with: a pseudo-random vector per text (deterministic;
    near-orthogonal texts, so that nothing folds as a duplicate)."""

    model_name = "old-hash-32"
    dimension = 32

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([np.random.default_rng(
            int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")).standard_normal(32)
            for t in texts], dtype=np.float32).reshape(len(texts), 32)


@dataclass
class ReembedKill:
    vectors: int  # stored vectors before the first run
    done_at_kill: int  # of them in the new model's space when the run was killed
    switched_early: bool  # the store named the new model before every vector was done
    recomputed: int  # vectors the second run recomputed (vectors - done_at_kill: none twice)
    stale: int  # vectors not marked as the new model's after the second run
    wrong: int  # vectors not equal to the new model's embedding of their text
    lost: int  # rows that were there before and are not after


def _sync(url: str) -> Any:
    sync = make_url(resolve_url(url))
    sync = sync.set(drivername="sqlite" if sync.get_backend_name() == "sqlite"
                    else "postgresql+psycopg")
    return create_engine(sync, poolclass=NullPool)


def _fill(url: str, facts: int, turns: int) -> None:
    now = datetime.now(UTC).isoformat()
    messages = [{"role": ("user", "assistant")[n % 2], "content": f"Turn {n}: item {n * 7919}",
                 "summarized": False, "created_at": now} for n in range(turns)]
    with TrueMem(url, embedder=OldEmbedder()) as store:
        store.add_memories("ana", [f"Fact {n}: code {n * 7919}" for n in range(facts)])
        store.import_user("ben", {"format": "truemem.user/1", "user_id": "ben", "memories": [],
                                  "sessions": [{"session_id": "s", "created_at": now,
                                                "summary": None, "messages": messages}]})


def _rows(engine: Any) -> dict[tuple[str, Any], tuple[str, str | None, Any]]:
    """(table, id) -> (text, embedding_model, vector) of every row with a vector."""
    with engine.connect() as conn:
        return {(table.name, row[0]): (row[1], row.embedding_model, row.embedding)
                for table, text in TEXTS.items()
                for row in conn.execute(select(table.c.id, text, table.c.embedding,
                                               table.c.embedding_model)
                                        .where(table.c.embedding.is_not(None)))}


def _model(engine: Any) -> str:
    with engine.connect() as conn:
        return str(conn.scalar(select(store_meta.c.value)
                               .where(store_meta.c.key == "embedding_model")))


def _done(engine: Any, model: str) -> int:
    with engine.connect() as conn:
        return sum(conn.scalar(select(func.count()).where(table.c.embedding_model == model))
                   or 0 for table in TEXTS)


def reembed_command(url: str) -> list[str]:
    return [sys.executable, "-m", "truemem_core.cli", "--database", url, "reembed"]


def kill_mid_reembed(url: str, *, facts: int = 700, turns: int = 700,
                     env: dict[str, str] | None = None, timeout: float = 600) -> ReembedKill:
    """The scenario on a new store at ``url`` (``env``: of the two ``truemem`` runs)."""
    _fill(url, facts, turns)
    new = default_embedder()
    engine = _sync(url)
    try:
        before = _rows(engine)
        child = subprocess.Popen(reembed_command(url), env=env or dict(os.environ),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not _done(engine, new.model_name) and child.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError("reembed committed no batch")
            time.sleep(0.01)  # polls for the first committed batch
        child.send_signal(signal.SIGKILL)
        child.wait()
        done_at_kill = _done(engine, new.model_name)
        switched_early = (_model(engine) == new.model_name) and done_at_kill < len(before)
        rerun = subprocess.run(reembed_command(url), env=env or dict(os.environ),
                               capture_output=True, text=True, timeout=timeout, check=True)
        recomputed = int(rerun.stdout.split("re-embedded ")[1].split()[0])
        after = _rows(engine)
        wanted = normalize(new.embed([text for text, _, _ in after.values()]))
        got = normalize(np.asarray([vector for _, _, vector in after.values()]))
        wrong = int(np.sum(np.einsum("ij,ij->i", got, wanted) < 0.999))
        return ReembedKill(
            vectors=len(before), done_at_kill=done_at_kill, switched_early=switched_early,
            recomputed=recomputed,
            stale=sum(model != new.model_name for _, model, _ in after.values())
            + (_model(engine) != new.model_name),
            wrong=wrong, lost=len(before.keys() - after.keys()))
    finally:
        engine.dispose()


if __name__ == "__main__":
    print(asdict(kill_mid_reembed(sys.argv[1])))
