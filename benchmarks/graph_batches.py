"""How a graph batch's cost grows with its size: ``add_relations`` of n new pairs.

Each batch goes to a user of its own on one store per backend: n relations between
2n entities that do not exist yet (so each also creates its entities), timed through
the public API. Linear growth: the time per relation stays flat as n doubles.

    .venv/bin/python benchmarks/graph_batches.py                  # 1k, 2k, 4k; both backends
    .venv/bin/python benchmarks/graph_batches.py --sizes 1000,10000 --backends sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

from _common import describe_machine, machine_info, markdown_table, postgres_url, write_results

from truemem_core import TrueMem


def time_batches(url: str, sizes: list[int]) -> list[float]:
    """Seconds of one ``add_relations`` call per size (each for a fresh user)."""
    seconds = []
    with TrueMem(url) as memory:
        memory.graph.add_entities("warm-up", [{"name": "x", "type": "thing"}])
        for n in sizes:
            batch = [{"source": f"person {n} {i}", "type": "knows", "target": f"friend {n} {i}"}
                     for i in range(n)]
            began = time.perf_counter()
            added = memory.graph.add_relations(f"user-{n}", batch)
            seconds.append(time.perf_counter() - began)
            assert len(added) == n
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="PostgreSQL URL (default: a throw-away server)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="raw results here (default: benchmarks/results/)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    with contextlib.ExitStack() as stack:
        for backend in args.backends.split(","):
            if backend == "postgres":
                url = stack.enter_context(postgres_url(args.database_url))
            else:
                url = str(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "g.db")
            for n, seconds in zip(sizes, time_batches(url, sizes), strict=True):
                rows.append((backend, f"{n:,}", f"{seconds:.2f}", f"{seconds / n * 1000:.2f}"))
    machine = machine_info()
    print(describe_machine(machine, {}))
    print(markdown_table(("backend", "relations", "seconds", "ms per relation"), rows))
    write_results("graph_batches", {"machine": machine, "sizes": sizes, "rows": rows}, args.json)


if __name__ == "__main__":
    main()
