"""How fast this machine can stream fp32 weights: the floor under the embedder's latency.

    .venv/bin/python benchmarks/weight_streaming.py [--rounds 8]

A 10-token query multiplies a 10-row activation by every weight matrix of MiniLM once:
42 MB of fp32 weights, 106 M multiply-adds. This script times onnxruntime's MatMul on the
shape of MiniLM's feed-forward layer (10 x 384 @ 384 x 1536, 2.4 MB of weights) while the
set of distinct weight matrices it cycles through grows from 2 MB (stays in cache) to 42 MB
(MiniLM's size), with the embedder's own ``session.run`` timed in the same rounds. When the
per-matmul time stops falling with fewer bytes, the work is compute-bound; when it doubles as
the set outgrows the cache, it is bound by memory bandwidth, and the embedder's time is
about 42 MB divided by the streaming rate.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
from embedding_latency import machine
from onnx import TensorProto, helper, numpy_helper

from truemem_core.embeddings import MiniLMEmbedder

ROWS, K, N = 10, 384, 1536
MATRIX_MB = K * N * 4 / 1e6
MINILM_MB = 6 * (384 * 1152 + 384 * 384 + 2 * 384 * 1536) * 4 / 1e6  # every layer's weights
QUERY = "What is the name of my dog?"  # 10 tokens with [CLS]/[SEP]


def matmul_chain(copies: int, threads: int) -> Callable[[], object]:
    """One run = ``copies`` MatMuls of the same input by distinct weight matrices."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((K, N), dtype=np.float32), f"w{c}")
               for c in range(copies)]
    nodes = [helper.make_node("MatMul", ["x", f"w{c}"], [f"y{c}"]) for c in range(copies)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, K])],
        [helper.make_tensor_value_info(f"y{c}", TensorProto.FLOAT, [ROWS, N])
         for c in range(copies)], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    feeds = {"x": rng.standard_normal((ROWS, K), dtype=np.float32)}
    return lambda: session.run(None, feeds)


def median_ms(call: Callable[[], object], repeats: int) -> float:
    for _ in range(10):
        call()
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        timings.append(time.perf_counter() - start)
    return float(np.median(timings) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="alternating timing rounds")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(machine())
    copies = (1, 2, 4, 6, 8, 12, 18)
    calls = {f"{c * MATRIX_MB:4.0f} MB of weights": (c, matmul_chain(c, args.threads))
             for c in copies}
    embedder = MiniLMEmbedder(threads=args.threads)
    embedder.embed([QUERY])
    ids = np.asarray([embedder._tokenizer.encode(QUERY).ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
             "token_type_ids": np.zeros_like(ids)}
    run_ms: list[float] = []
    per_matmul: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.rounds):  # alternate, so host noise falls on every variant alike
        for name, (count, call) in calls.items():
            per_matmul[name].append(median_ms(call, max(20, 400 // count)) / count)
        run_ms.append(median_ms(lambda: embedder._session.run(None, feeds), 100))
    print(f"MatMul {ROWS}x{K} @ {K}x{N} ({MATRIX_MB:.2f} MB fp32), {args.threads} threads, "
          f"median of {args.rounds} rounds:")
    for name, values in per_matmul.items():
        us = np.median(values) * 1000
        print(f"  {name}: {us:6.0f} us per MatMul, {MATRIX_MB / us * 1000:5.1f} GB/s")
    largest = per_matmul[list(calls)[-1]]
    rate = MATRIX_MB / np.median(largest)  # MB per ms = GB/s
    print(f"MiniLM weights {MINILM_MB:.1f} MB at {rate:.1f} GB/s: {MINILM_MB / rate:.2f} ms; "
          f"embedder session.run on {QUERY!r}: {np.median(run_ms):.2f} ms "
          f"(rounds {' '.join(f'{v:.2f}' for v in run_ms)}); loadavg {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
