"""A progress bar on stderr for the commands that take a while (importing, re-embedding)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr from the first ``update(done, total)`` on (so that an
    error found before any work is the only line)."""
    # rich draws a live bar on a terminal and prints the final state elsewhere (logs, CI)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(label, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True))
    task = bar.add_task(label, total=None)
    started = threading.Event()

    def update(done: int, total: int) -> None:
        if not started.is_set():
            started.set()
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if started.is_set():
            bar.stop()
