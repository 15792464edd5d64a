"""Latency of the local MiniLM embedder: one short query, one medium text, batches of 32.

    .venv/bin/python benchmarks/embedding_latency.py [--variants fp32,int8,int8-file] [--threads 2]

Each timed block waits until the machine is idle (other processes below --idle of the
CPU) because a 2-core box shared with anything else gives meaningless millisecond numbers;
blocks alternate between the variants, and the number of blocks that still had to start
on a busy machine (after --max-wait) is reported with the results.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from minilm_variants import VARIANTS, embedder

SHORT = "What is the name of my dog?"  # 10 tokens with [CLS]/[SEP]
MEDIUM = (
    "Last summer I moved to a small town near the coast, adopted two cats, started "
    "working remotely as a data engineer for a logistics company and began sailing "
    "with my older brother every other weekend."
)  # 40 tokens


def machine() -> str:
    import onnxruntime

    cpu = "unknown CPU"
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            cpu = value.strip()
        elif key.strip() == "flags":
            flags = set(value.split())
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni") if f in flags]
    return (
        f"{os.cpu_count()} x {cpu} ({', '.join(simd) or 'no AVX2'}); Python "
        f"{platform.python_version()}, onnxruntime {onnxruntime.__version__}, "
        f"numpy {np.__version__}; loadavg {os.getloadavg()[0]:.2f}"
    )


def busy(seconds: float = 0.3) -> float:
    """Fraction of all CPUs busy over ``seconds`` (from /proc/stat)."""

    def sample() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return sum(values), values[3] + values[4]

    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


def wait_idle(limit: float, max_wait: float) -> float:
    deadline = time.monotonic() + max_wait
    while True:
        load = busy()
        if load <= limit or time.monotonic() > deadline:
            return load


def measure(
    cases: dict[str, Callable[[], object]], runs: int, block: int, idle: float, max_wait: float
) -> tuple[dict[str, np.ndarray], int]:
    """``runs`` timings (ms) per case, in blocks of ``block`` taken round-robin over the cases
    (so every variant sees the same machine), each block started once the CPU is idle.
    Also returns how many blocks had to start on a busy machine."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    busy_blocks = 0
    while any(len(v) < runs for v in samples.values()):
        for name, fn in cases.items():
            busy_blocks += wait_idle(idle, max_wait) > idle
            for _ in range(3):
                fn()
            for _ in range(min(block, runs - len(samples[name]))):
                start = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - start)
    return {name: np.array(v) * 1000 for name, v in samples.items()}, busy_blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads")
    parser.add_argument("--runs", type=int, default=300, help="timed single queries")
    parser.add_argument("--batches", type=int, default=20, help="timed batches of 32")
    parser.add_argument("--idle", type=float, default=0.10, help="max CPU busy to start")
    parser.add_argument("--max-wait", type=float, default=60.0, help="seconds to wait idle")
    args = parser.parse_args()

    print(machine())
    batch = [f"{MEDIUM} ({i})" if i % 2 else f"{SHORT} ({i})" for i in range(32)]
    models, loads = {}, {}
    for variant in args.variants.split(","):
        start = time.perf_counter()
        model = embedder(variant, threads=args.threads)
        model.embed([SHORT])  # loads the model
        loads[variant] = time.perf_counter() - start
        models[variant] = model
        for _ in range(30):  # warm-up
            model.embed([SHORT])
            model.embed([MEDIUM])
        model.embed(batch)
    waits = (args.idle, args.max_wait)
    short, busy1 = measure(
        {v: partial(m.embed, [SHORT]) for v, m in models.items()}, args.runs, 50, *waits
    )
    medium, busy2 = measure(
        {v: partial(m.embed, [MEDIUM]) for v, m in models.items()}, args.runs, 50, *waits
    )
    batches, busy3 = measure(
        {v: partial(m.embed, batch) for v, m in models.items()}, args.batches, 5, *waits
    )
    print(
        f"intra-op threads {args.threads}; ms; short = 10 tokens, medium = 40 tokens, batch = "
        f"32 texts of 10/40 tokens; blocks started on a busy CPU: {busy1 + busy2 + busy3}"
    )
    header = f"{'variant':9} {'load s':>6} {'short p50':>9} {'p95':>6} {'medium p50':>10}"
    print(header + f" {'p95':>6} {'batch32 p50':>11} {'texts/s':>8}")
    p = np.percentile
    for v in models:
        print(
            f"{v:9} {loads[v]:6.2f} {p(short[v], 50):9.2f} {p(short[v], 95):6.2f} "
            f"{p(medium[v], 50):10.2f} {p(medium[v], 95):6.2f} {p(batches[v], 50):11.1f} "
            f"{32_000 / p(batches[v], 50):8.0f}"
        )


if __name__ == "__main__":
    main()
