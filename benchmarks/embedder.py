"""The built-in embedder: latency of one query, throughput of a batch, fidelity.

* latency: p50 / p95 of ``embed([text])`` for a short query (10 tokens) and a longer
  message (40 tokens), back to back after a warm-up, in this process;
* throughput: texts per second in batches of 32 (as when memories are stored);
* fidelity: cosine of each vector to the reference vectors of the original PyTorch
  all-MiniLM-L6-v2 (sentence-transformers, fp32) shipped with the tests
  (``tests/data/minilm_reference.json``), one text at a time and batched.

    .venv/bin/python benchmarks/embedder.py
    .venv/bin/python benchmarks/embedder.py --precision int8 --threads 1 --queries 1000

Millisecond figures depend on what else runs on the machine: on a shared or small
machine, run it a few times and read the spread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from _common import describe_machine, loadavg, machine_info, percentiles

from truemem_core import MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "data" / "minilm_reference.json"
SHORT = "What is the name of my dog?"  # 10 tokens with [CLS]/[SEP]
MEDIUM = (
    "Last summer I moved to a small town near the coast, adopted two cats, started "
    "working remotely as a data engineer for a logistics company and began sailing "
    "with my older brother every other weekend."
)  # 40 tokens


def timed(embedder: MiniLMEmbedder, texts: list[str], runs: int) -> list[float]:
    for _ in range(max(runs // 10, 3)):  # warm-up
        embedder.embed(texts)
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        embedder.embed(texts)
        samples.append(time.perf_counter() - began)
    return samples


def fidelity(embedder: MiniLMEmbedder, path: Path) -> str:
    reference = json.loads(path.read_text(encoding="utf-8"))
    texts: list[str] = reference["texts"]
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    lines = [f"fidelity to {reference['source']}: {len(texts)} texts"]
    for mode in ("single", "batch"):
        if mode == "batch":
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        else:
            vectors = np.concatenate([embedder.embed([t]) for t in texts]).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cosines = (vectors * expected).sum(axis=1)
        worst = int(np.argmin(cosines))
        lines.append(f"  {mode:6}: min cosine {cosines.min():.7f} (1 - min = "
                     f"{max(0.0, 1 - cosines.min()):.1e}), mean {cosines.mean():.7f}, "
                     f"worst text {texts[worst][:40]!r}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", choices=("auto", "fp32", "int8"), default="auto",
                        help="weights: fp32 (original), int8 export, auto = fp32 if installed")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--queries", type=int, default=500, help="timed single embeds per text")
    parser.add_argument("--batches", type=int, default=20, help="timed batches of 32")
    parser.add_argument("--reference", type=Path, default=REFERENCE,
                        help="reference vectors (JSON with texts, vectors, source)")
    args = parser.parse_args()

    machine = machine_info()
    began = time.perf_counter()
    embedder = MiniLMEmbedder(threads=args.threads, precision=args.precision)
    embedder.embed([SHORT])
    load_seconds = time.perf_counter() - began
    short = percentiles(timed(embedder, [SHORT], args.queries))
    medium = percentiles(timed(embedder, [MEDIUM], args.queries))
    batch = [f"{MEDIUM} ({i})" if i % 2 else f"{SHORT} ({i})" for i in range(32)]
    batches = percentiles(timed(embedder, batch, args.batches))

    print(describe_machine(machine, {}))
    print(f"load average (1/5/15 min): {machine['loadavg_at_start']} -> {loadavg()}")
    print(f"{embedder.model_name}, {embedder.precision} weights, {args.threads} threads; "
          f"model load {load_seconds:.2f}s\n")
    print(f"one query, 10 tokens ({args.queries} runs): p50 {short['p50_ms']:.2f} ms, "
          f"p95 {short['p95_ms']:.2f} ms")
    print(f"one text, 40 tokens ({args.queries} runs): p50 {medium['p50_ms']:.2f} ms, "
          f"p95 {medium['p95_ms']:.2f} ms")
    print(f"batches of 32 mixed texts ({args.batches} runs): p50 {batches['p50_ms']:.1f} ms, "
          f"{32_000 / batches['p50_ms']:.0f} texts/s")
    if args.reference.is_file():
        print("\n" + fidelity(embedder, args.reference))
    else:
        print(f"\nno reference vectors at {args.reference}: fidelity not measured",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
