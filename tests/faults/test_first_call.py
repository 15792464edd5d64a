"""What a process does once happens as a store opens, not in a call that others wait on.

Loading the embedding model or tiktoken's tables holds the interpreter lock for hundreds
of milliseconds, and an import on the event loop stops it: done by a user's first
context or first ``record`` mid-traffic, every other call of the process would wait.
Behaviour, not timing: what is loaded when, in which thread, and what is never imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from truemem_core import MiniLMEmbedder, TiktokenCounter, TrueMem
from truemem_core.embeddings import default_embedder


def test_opening_a_store_loads_the_embedding_model_and_the_token_tables(
    store_url: str,
) -> None:
    embedder, counter = MiniLMEmbedder(), TiktokenCounter()
    with TrueMem(store_url, embedder=embedder, token_counter=counter) as memory:
        assert embedder.precision is None  # construction loads nothing
        assert counter._encoding is None
        memory.list_memories("ana")  # the first call, which needs neither
        assert embedder.precision is not None
        assert counter._encoding is not None


def test_loads_run_once_in_the_embedders_low_priority_threads(store_url: str) -> None:
    embedder = default_embedder()
    loads: list[tuple[str, str, int]] = []

    def loaded(what: str) -> None:
        native = threading.get_native_id()
        loads.append((what, threading.current_thread().name,
                      os.getpriority(os.PRIO_PROCESS, native)))

    class Embedder:
        model_name, dimension = embedder.model_name, embedder.dimension

        def load(self) -> None:
            loaded("embedder")

        def embed(self, texts: Any) -> Any:
            return embedder.embed(texts)

    class Counter:
        def load(self) -> None:
            loaded("counter")

        def count(self, text: str) -> int:
            return len(text.split())

    with TrueMem(store_url, embedder=Embedder(), token_counter=Counter()) as memory:
        assert not loads
        memory.add_memory("ana", "Ana is allergic to peanuts")
        memory.get_context("ana", "s", "what am I allergic to?")
    assert sorted(what for what, _, _ in loads) == ["counter", "embedder"]
    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert all(name.startswith("truemem-embed") and nice > here for _, name, nice in loads)


def test_an_embedded_store_queues_jobs_without_importing_redis(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        from truemem_core import TrueMem
        with TrueMem({str(tmp_path / "store.db")!r}) as memory:
            memory.record("ana", "s", "I moved to Porto last year", "Nice!")
            memory.drain(timeout=60)
            assert memory.list_memories("ana"), "the job ran"
        print("redis" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]


def test_without_preload_each_loads_when_first_needed(store_url: str) -> None:
    embedder, counter = MiniLMEmbedder(), TiktokenCounter()
    with TrueMem(store_url, embedder=embedder, token_counter=counter,
                 preload=False) as memory:
        memory.list_memories("ana")
        assert embedder.precision is None and counter._encoding is None
        memory.add_memory("ana", "Ana is allergic to peanuts")
        assert embedder.precision is not None
