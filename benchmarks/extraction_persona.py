"""Precision and recall of the rule-based fact extractor on Synthetic-Persona-Chat.

Each conversation gives both speakers' persona sentences (the gold facts) and
their utterances. The extractor runs over each speaker's utterances; a fact is
a true positive when its embedding's cosine similarity to one of that speaker's
persona sentences reaches the threshold.

    precision = true-positive facts / extracted facts
    recall    = persona sentences matched by at least one fact / persona sentences

Usage (from the repository root):

    .venv/bin/python benchmarks/extraction_persona.py [--limit N] [--threshold 0.6]
        [--data PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import write_results
from numpy.typing import NDArray

from truemem_core import default_embedder
from truemem_core.language import extract_labelled

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "persona_chat_valid.json"
REPORTED_THRESHOLDS = (0.5, 0.6, 0.7)


@dataclass
class Speaker:
    gold: list[str]
    facts: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)


def load_speakers(path: Path, limit: int | None) -> list[Speaker]:
    """One entry per (conversation, speaker) with that speaker's gold and extracted facts."""
    conversations = json.loads(path.read_text(encoding="utf-8"))[:limit]
    speakers: list[Speaker] = []
    started = time.perf_counter()
    for number, conversation in enumerate(conversations, 1):
        for index, persona_key in ((1, "user_1_persona"), (2, "user_2_persona")):
            speaker = Speaker(gold=[s.strip() for s in conversation[persona_key] if s.strip()])
            seen: set[str] = set()
            for turn in conversation["conversation"]:
                if turn["speaker"] != f"User {index}":
                    continue  # the other speaker's turns are "assistant" text here
                for category, fact in extract_labelled(turn["text"]):
                    if fact.text.lower() not in seen:
                        seen.add(fact.text.lower())
                        speaker.facts.append(fact.text)
                        speaker.categories.append(category)
            speakers.append(speaker)
        if number % 100 == 0 or number == len(conversations):
            elapsed = time.perf_counter() - started
            print(
                f"extracted {number}/{len(conversations)} conversations ({elapsed:.1f}s)",
                file=sys.stderr,
            )
    return speakers


def embed_all(texts: list[str]) -> dict[str, NDArray[np.float32]]:
    """Each distinct text's L2-normalised vector, embedded in chunks with progress."""
    embedder = default_embedder()
    unique = sorted(set(texts))
    vectors: dict[str, NDArray[np.float32]] = {}
    chunk = 2048
    started = time.perf_counter()
    for start in range(0, len(unique), chunk):
        part = unique[start : start + chunk]
        for text, vector in zip(part, embedder.embed(part), strict=True):
            vectors[text] = vector
        done = min(start + chunk, len(unique))
        elapsed = time.perf_counter() - started
        print(f"embedded {done}/{len(unique)} texts ({elapsed:.1f}s)", file=sys.stderr)
    return vectors


def evaluate(
    speakers: list[Speaker], vectors: dict[str, NDArray[np.float32]], thresholds: list[float]
) -> dict[str, Any]:
    """Figures per threshold and, at the main threshold, per category."""
    totals = {t: Counter[str]() for t in thresholds}
    per_category: dict[str, Counter[str]] = {}
    main = thresholds[0]
    for speaker in speakers:
        if not speaker.gold:
            continue
        gold = np.stack([vectors[s] for s in speaker.gold])
        if speaker.facts:
            facts = np.stack([vectors[f] for f in speaker.facts])
            similarity = facts @ gold.T  # cosine: both sides are normalised
        else:
            similarity = np.zeros((0, len(speaker.gold)), dtype=np.float32)
        for t in thresholds:
            hits = similarity >= t
            totals[t].update(
                facts=len(speaker.facts),
                true_positives=int(hits.any(axis=1).sum()),
                gold=len(speaker.gold),
                gold_matched=int(hits.any(axis=0).sum()),
            )
        best = similarity.max(axis=1) if speaker.facts else np.zeros(0)
        for category, score in zip(speaker.categories, best, strict=True):
            counts = per_category.setdefault(category, Counter())
            counts.update(facts=1, true_positives=int(score >= main))
    return {
        "thresholds": {
            str(t): {
                **dict(c),
                "precision": c["true_positives"] / c["facts"] if c["facts"] else 0.0,
                "recall": c["gold_matched"] / c["gold"] if c["gold"] else 0.0,
            }
            for t, c in totals.items()
        },
        "categories": {
            name: {
                **dict(c),
                "precision": c["true_positives"] / c["facts"] if c["facts"] else 0.0,
            }
            for name, c in sorted(per_category.items(), key=lambda kv: -kv[1]["facts"])
        },
    }


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version()}


def print_report(report: dict[str, Any]) -> None:
    print(
        f"\nSynthetic-Persona-Chat: {report['conversations']} conversations, "
        f"{report['speakers']} speakers, {report['gold']} persona sentences, "
        f"{report['facts']} extracted facts ({report['facts_per_speaker']:.2f} per speaker)"
    )
    print(
        f"machine: {report['machine']['cpus']} CPUs, {report['machine']['cpu']}; "
        f"extraction {report['extraction_seconds']:.1f}s, "
        f"embedding {report['embedding_seconds']:.1f}s\n"
    )
    print(f"{'threshold':>9}  {'precision':>9}  {'recall':>6}  {'TP facts':>8}  {'matched':>7}")
    for t, row in report["thresholds"].items():
        print(
            f"{float(t):>9.2f}  {row['precision']:>9.3f}  {row['recall']:>6.3f}  "
            f"{row['true_positives']:>8}  {row['gold_matched']:>7}"
        )
    print(f"\nper category at threshold {report['threshold']:.2f}:")
    print(f"{'category':>10}  {'facts':>6}  {'TP':>6}  {'precision':>9}")
    for name, row in report["categories"].items():
        print(
            f"{name:>10}  {row['facts']:>6}  {row['true_positives']:>6}  {row['precision']:>9.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="persona_chat_valid.json")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    parser.add_argument("--threshold", type=float, default=0.6, help="main cosine threshold")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(
            f"error: data file not found: {args.data}\n"
            "Synthetic-Persona-Chat is expected in ../shared/data/ next to the repository; "
            "pass --data PATH to point elsewhere.",
            file=sys.stderr,
        )
        return 2

    started = time.perf_counter()
    speakers = load_speakers(args.data, args.limit)
    extraction_seconds = time.perf_counter() - started
    started = time.perf_counter()
    texts = [t for s in speakers for t in (*s.gold, *s.facts)]
    vectors = embed_all(texts)
    embedding_seconds = time.perf_counter() - started

    thresholds = [args.threshold, *(t for t in REPORTED_THRESHOLDS if t != args.threshold)]
    figures = evaluate(speakers, vectors, thresholds)
    figures["thresholds"] = dict(sorted(figures["thresholds"].items()))
    facts = sum(len(s.facts) for s in speakers)
    report = {
        "data": str(args.data),
        "conversations": len(speakers) // 2,
        "speakers": len(speakers),
        "gold": sum(len(s.gold) for s in speakers),
        "facts": facts,
        "facts_per_speaker": facts / len(speakers) if speakers else 0.0,
        "threshold": args.threshold,
        **figures,
        "extraction_seconds": extraction_seconds,
        "embedding_seconds": embedding_seconds,
        "machine": machine(),
    }
    print_report(report)
    write_results("extraction_persona", report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
