"""Precision and recall of explicit-request detection, through the product's own path.

Each message of ``tests/data/explicit_requests.jsonl`` is labelled: a direct request of
the user ("remember that I'm vegan", in several languages) or not — most of the "not"
being someone else's words the user brings along: an email to summarize, a document,
code, a chat log, a text to translate, reported speech, each with a "remember that…"
inside. Each message goes through TrueMem twice, on a throw-away SQLite store, one user
per message and path:

- ``get_context``: the request path, which stores explicit requests at once;
- ``record`` then ``drain``: the background extraction, as a caller that only records.

A message counts as detected when that path stored an explicit memory; "high" counts
any memory of importance 4 or more (what reaches every context as critical, or nearly).

    precision = direct requests detected / messages detected
    recall    = direct requests detected / direct requests

Usage (from the repository root):

    .venv/bin/python benchmarks/explicit_detection.py [--data PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from _common import machine_info

from truemem_core import TrueMem

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT / "tests" / "data" / "explicit_requests.jsonl"
DEFAULT_JSON = REPO_ROOT / "benchmarks" / "results" / "explicit_detection.json"
PATHS = ("get_context", "record")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def run(memory: TrueMem, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message through both paths; what each stored."""
    for n, row in enumerate(rows):
        memory.get_context(f"c{n}", "s", row["text"])
        memory.record(f"r{n}", "s", row["text"], "OK.")
    memory.drain()
    results = []
    for n, row in enumerate(rows):
        outcome: dict[str, Any] = dict(row)
        for path, user in zip(PATHS, (f"c{n}", f"r{n}"), strict=True):
            stored = memory.list_memories(user)
            outcome[path] = {
                "explicit": [m.text for m in stored if m.source == "explicit"],
                "high": [f"{m.importance} {m.text}" for m in stored if m.importance >= 4],
            }
        results.append(outcome)
    return results


def figures(results: list[dict[str, Any]], path: str) -> dict[str, Any]:
    """Precision and recall of one path, and what injected text made of high memories."""
    detected = [bool(r[path]["explicit"]) for r in results]
    wanted = [bool(r["explicit"]) for r in results]
    hits = sum(d and w for d, w in zip(detected, wanted, strict=True))
    injected = [r for r in results if not r["explicit"]]
    return {
        "messages": len(results),
        "direct": sum(wanted),
        "detected": sum(detected),
        "true_positives": hits,
        "precision": round(hits / sum(detected), 3) if any(detected) else None,
        "recall": round(hits / sum(wanted), 3) if any(wanted) else None,
        "injected_explicit": sum(bool(r[path]["explicit"]) for r in injected),
        "injected_importance_4_plus": sum(bool(r[path]["high"]) for r in injected),
        "missed": [r["text"] for r in results if r["explicit"] and not r[path]["explicit"]],
        "false_explicit": [r["text"] for r in injected if r[path]["explicit"]],
    }


def by_language(results: list[dict[str, Any]], path: str) -> dict[str, str]:
    direct: Counter[str] = Counter()
    found: Counter[str] = Counter()
    for r in results:
        if r["explicit"]:
            direct[r["language"]] += 1
            found[r["language"]] += bool(r[path]["explicit"])
    return {lang: f"{found[lang]}/{direct[lang]}" for lang in sorted(direct)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="raw results here")
    args = parser.parse_args()
    rows = load(args.data)
    machine = machine_info()
    with tempfile.TemporaryDirectory() as folder, \
            TrueMem(f"sqlite:///{Path(folder) / 'bench.db'}") as memory:
        results = run(memory, rows)
    report = {"machine": machine, "data": str(args.data.relative_to(REPO_ROOT)
                                              if args.data.is_relative_to(REPO_ROOT)
                                              else args.data),
              "figures": {path: figures(results, path) for path in PATHS},
              "direct_found_by_language": {path: by_language(results, path) for path in PATHS},
              "results": results}
    print(f"{machine['date']}, {machine['cores']} cores, {machine['cpu']}")
    print(f"{len(rows)} messages, {sum(r['explicit'] for r in rows)} direct requests, "
          f"{sum(not r['explicit'] for r in rows)} not (injected or no request)")
    for path in PATHS:
        f = report["figures"][path]
        print(f"{path:12} precision {f['precision']}  recall {f['recall']}  "
              f"injected -> explicit {f['injected_explicit']}, "
              f"-> importance>=4 {f['injected_importance_4_plus']}  "
              f"direct found by language {report['direct_found_by_language'][path]}")
        for text in f["missed"]:
            print(f"    missed: {text[:90]!r}")
        for text in f["false_explicit"]:
            print(f"    injected stored as explicit: {text[:90]!r}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
