"""Back-to-back latency of the built-in embedder on one short query, in this process.

    for i in 1 2 3 4; do .venv/bin/python benchmarks/embedding_loop.py; done

Complements embedding_latency.py (which alternates variants in idle-gated blocks):
the steady-state p50 of ``MiniLMEmbedder().embed([query])``. Run it several times;
each run is a fresh process, and on a shared VM the spread between runs is large.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from truemem_core.embeddings import MiniLMEmbedder

QUERY = "What is the name of my dog?"  # 10 tokens with [CLS]/[SEP]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--precision", choices=("auto", "fp32", "int8"), default="auto")
    args = parser.parse_args()
    embedder = MiniLMEmbedder(precision=args.precision)
    for _ in range(50):  # load and warm up
        embedder.embed([QUERY])
    timings = []
    for _ in range(args.queries):
        start = time.perf_counter()
        embedder.embed([QUERY])
        timings.append(time.perf_counter() - start)
    ms = np.array(timings) * 1000
    print(f"{embedder.precision} weights, {args.queries} queries, loadavg "
          f"{os.getloadavg()[0]:.2f}: p50 {np.percentile(ms, 50):.2f} ms, "
          f"p95 {np.percentile(ms, 95):.2f} ms")


if __name__ == "__main__":
    main()
