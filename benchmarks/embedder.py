"""The built-in embedder: latency of one query, throughput of a batch, fidelity.

* latency: p50 / p95 of ``embed([text])`` for a short query (10 tokens) and a longer
  message (40 tokens), back to back after a warm-up, in this process; with ``--pause
  MS``, each after that long idle, as a chat's messages come (a server does other
  work between them, and the model's weights leave the CPU caches meanwhile);
* throughput: texts per second in batches of 32 (as when memories are stored); and
  model tokens per second, per wall second and per CPU second of the process, in
  batches of 32 passages of ~90 tokens (what a drain embeds: ``jobs.handlers``), with
  the drain rate it bounds: messages per second at most, for a chat's short messages
  (40 tokens) and for BEAM's (~800 tokens a message, its long replies' passages);
* fidelity: cosine of each vector to the reference vectors of the original PyTorch
  all-MiniLM-L6-v2 (sentence-transformers, fp32) shipped with the tests
  (``tests/data/minilm_reference.json``), one text at a time and batched.

With ``--int8-queries``, the query path in int8 arithmetic (``embed_queries``) beside
the fp32 one: both latencies measured in alternating blocks of 50 runs, its fidelity to
the reference, and what it changes in a search on LoCoMo (``locomo_dev.json``, see
``--data``): every question embedded both ways against its conversation's turns
embedded in fp32 (as stored), the cosine of the two query vectors and the share of the
fp32 query's exact top 10 that the int8 query's exact top 10 holds.

    .venv/bin/python benchmarks/embedder.py
    .venv/bin/python benchmarks/embedder.py --precision int8 --threads 1 --queries 1000
    .venv/bin/python benchmarks/embedder.py --int8-queries
    .venv/bin/python benchmarks/embedder.py --int8-queries --pause 5

Millisecond figures depend on what else runs on the machine: on a shared or small
machine, run it a few times and read the spread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    DEFAULT_DATA,
    LOCOMO_FILE,
    describe_machine,
    load_locomo,
    loadavg,
    locomo_turns,
    machine_info,
    percentiles,
    write_results,
)

from truemem_core import MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "data" / "minilm_reference.json"
SHORT = "What is the name of my dog?"  # 10 tokens with [CLS]/[SEP]
MEDIUM = (
    "Last summer I moved to a small town near the coast, adopted two cats, started "
    "working remotely as a data engineer for a logistics company and began sailing "
    "with my older brother every other weekend."
)  # 40 tokens


Embed = Callable[[Sequence[str]], np.ndarray]


def timed(embed: Embed, texts: list[str], runs: int, pause: float = 0.0) -> list[float]:
    """Seconds per ``embed(texts)``, back to back after a warm-up, or ``pause`` seconds
    after the last one ended."""
    for _ in range(max(runs // 10, 3)):  # warm-up
        embed(texts)
    samples = []
    for _ in range(runs):
        time.sleep(pause)
        began = time.perf_counter()
        embed(texts)
        samples.append(time.perf_counter() - began)
    return samples


PASSAGE = f"{MEDIUM} {MEDIUM} {SHORT}"  # ~90 tokens: a passage (``passage_tokens`` 100)
BEAM_TOKENS_PER_MESSAGE = 800  # BEAM 100K chat 1: 149,025 model tokens in 188 messages


def passage_throughput(embedder: MiniLMEmbedder, batches: int) -> dict[str, float]:
    """Model tokens per wall second and per CPU second (all threads of the process) over
    ``batches`` batches of 32 passages, in one call as a drain makes them."""
    texts = [f"{PASSAGE} ({i})" for i in range(32 * batches)]
    tokens = sum(len(encoding.ids) for encoding in embedder._encode(texts))  # the model's
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"tokens": tokens, "tokens_per_s": tokens / wall, "tokens_per_cpu_s": tokens / cpu}


def search_overlap(embedder: MiniLMEmbedder, int8: Embed, data: Path) -> str:
    """What int8 queries change in an exact search over LoCoMo's turns (see above)."""
    cosines, overlaps = [], []
    for sample in load_locomo(data):
        stored = embedder.embed([text for _, text, _ in locomo_turns(sample["conversation"])])
        questions = [str(qa["question"]) for qa in sample["qa"]]
        exact, quantised = embedder.embed(questions), int8(questions)
        cosines += list((exact * quantised).sum(axis=1))
        for a, b in zip(exact @ stored.T, quantised @ stored.T, strict=True):
            top_a, top_b = set(np.argsort(-a)[:10]), set(np.argsort(-b)[:10])
            overlaps.append(len(top_a & top_b) / 10)
    found = np.asarray(cosines)
    return (f"int8 queries on LoCoMo ({len(found)} questions against their conversation's "
            f"turns, stored in fp32): cosine to the fp32 query min {found.min():.4f}, "
            f"mean {found.mean():.4f}; the fp32 query's exact top 10 kept "
            f"{np.mean(overlaps):.3f} (exact search for either vector)")


def alternated(embed: Embed, int8: Embed, texts: list[str], runs: int, pause: float = 0.0,
               block: int = 50) -> tuple[list[float], list[float]]:
    """``timed`` for both query paths, in alternating blocks (this VM's speed drifts
    from one minute to the next; alternating exposes both to the same minutes)."""
    samples: tuple[list[float], list[float]] = ([], [])
    for start in range(0, runs, block):
        for embedder, out in ((embed, samples[0]), (int8, samples[1])):
            out += timed(embedder, texts, min(block, runs - start), pause)
    return samples


def fidelity(embed: Embed, path: Path, label: str = "") -> str:
    reference = json.loads(path.read_text(encoding="utf-8"))
    texts: list[str] = reference["texts"]
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    lines = [f"fidelity{label} to {reference['source']}: {len(texts)} texts"]
    for mode in ("single", "batch"):
        if mode == "batch":
            vectors = np.asarray(embed(texts), dtype=np.float32)
        else:
            vectors = np.concatenate([embed([t]) for t in texts]).astype(np.float32)
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
    parser.add_argument("--pause", type=float, default=0.0, metavar="MS",
                        help="idle this long before each timed query (as between a user's "
                             "messages), so the model's weights may leave the CPU caches")
    parser.add_argument("--int8-queries", action="store_true",
                        help="also the query path in int8 arithmetic, alternated with fp32")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"directory of {LOCOMO_FILE}, for --int8-queries "
                             f"(default: {DEFAULT_DATA})")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args()
    if args.pause < 0:
        parser.error("--pause must not be negative")

    machine = machine_info()
    began = time.perf_counter()
    embedder = MiniLMEmbedder(threads=args.threads, precision=args.precision,
                              int8_queries=args.int8_queries)
    embedder.embed([SHORT])
    load_seconds = time.perf_counter() - began
    int8 = embedder.embed_queries
    pause = args.pause / 1000
    if int8 is None:
        short = percentiles(timed(embedder.embed, [SHORT], args.queries, pause))
        medium = percentiles(timed(embedder.embed, [MEDIUM], args.queries, pause))
    else:
        short_both = alternated(embedder.embed, int8, [SHORT], args.queries, pause)
        medium_both = alternated(embedder.embed, int8, [MEDIUM], args.queries, pause)
        short, medium = percentiles(short_both[0]), percentiles(medium_both[0])
    batch = [f"{MEDIUM} ({i})" if i % 2 else f"{SHORT} ({i})" for i in range(32)]
    batches = percentiles(timed(embedder.embed, batch, args.batches))
    passages = passage_throughput(embedder, args.batches)

    print(describe_machine(machine, {}))
    print(f"load average (1/5/15 min): {machine['loadavg_at_start']} -> {loadavg()}")
    print(f"{embedder.model_name}, {embedder.precision} weights, {args.threads} threads; "
          f"model load {load_seconds:.2f}s\n")
    after = f", each {args.pause:g} ms after the last" if args.pause else ""
    print(f"one query, 10 tokens ({args.queries} runs{after}): p50 {short['p50_ms']:.2f} ms, "
          f"p95 {short['p95_ms']:.2f} ms")
    print(f"one text, 40 tokens ({args.queries} runs{after}): p50 {medium['p50_ms']:.2f} ms, "
          f"p95 {medium['p95_ms']:.2f} ms")
    print(f"batches of 32 mixed texts ({args.batches} runs): p50 {batches['p50_ms']:.1f} ms, "
          f"{32_000 / batches['p50_ms']:.0f} texts/s")
    rate, per_cpu = passages["tokens_per_s"], passages["tokens_per_cpu_s"]
    print(f"batches of 32 passages, {passages['tokens']:,} tokens in one call: {rate:,.0f} "
          f"tokens/s, {per_cpu:,.0f} tokens per CPU second; a drain embeds at most "
          f"{rate / 40:,.0f} messages/s of 40 tokens, {rate / BEAM_TOKENS_PER_MESSAGE:.1f} of "
          f"BEAM's (~{BEAM_TOKENS_PER_MESSAGE} tokens); with {args.threads} idle cores "
          f"{args.threads * per_cpu / BEAM_TOKENS_PER_MESSAGE:.1f} of BEAM's")
    results: dict[str, Any] = {
        "machine": machine, "config": {k: str(v) for k, v in vars(args).items()},
        "precision": embedder.precision, "load_seconds": load_seconds,
        "query_10_tokens": short, "text_40_tokens": medium, "batch_32": batches,
        "batch_texts_per_s": 32_000 / batches["p50_ms"], "passages_32": passages}
    if int8 is not None:
        for label, both in (("one query, 10 tokens", short_both),
                            ("one text, 40 tokens", medium_both)):
            fp32, quantised = percentiles(both[0]), percentiles(both[1])
            results[f"int8_queries, {label}"] = quantised
            print(f"{label}, alternated, int8 queries: p50 {quantised['p50_ms']:.2f} ms, "
                  f"p95 {quantised['p95_ms']:.2f} ms (fp32 above: p50 {fp32['p50_ms']:.2f} "
                  f"ms, ratio {quantised['p50_ms'] / fp32['p50_ms']:.2f})")
    if args.reference.is_file():
        results["fidelity"] = fidelity(embedder.embed, args.reference)
        print("\n" + results["fidelity"])
        if int8 is not None:
            results["fidelity_int8_queries"] = fidelity(int8, args.reference, ", int8 queries,")
            print(results["fidelity_int8_queries"])
    else:
        print(f"\nno reference vectors at {args.reference}: fidelity not measured",
              file=sys.stderr)
    if int8 is not None:
        if (args.data / LOCOMO_FILE).is_file():
            results["search_overlap"] = search_overlap(embedder, int8, args.data)
            print("\n" + results["search_overlap"])
        else:
            print(f"\n{args.data / LOCOMO_FILE} not found: pass --data DIR; search overlap "
                  "not measured", file=sys.stderr)
    write_results("embedder", results, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
