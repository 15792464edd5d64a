"""Dedup and contradiction decisions on a labelled set of pairs, through the real write path.

    python benchmarks/dedup_decisions.py [--pairs tests/data/dedup_pairs.jsonl]
        [--database-url URL] [--readd 1200 --seed 0]

Each pair of ``tests/data/dedup_pairs.jsonl`` (an old fact, a new one, the decision a
careful reader expects: reinforce, supersede, close or distinct, and a category) goes
to a fresh user of one store (a temporary SQLite file unless ``--database-url``), with
the built-in embedder: ``add_memory(old)`` then ``add_memory(new)``, and again as one
``add_memories([old, new])`` (the bulk path). What the store did is read back: the new
fact folded into the old one (reinforce), the old one closed by it with a changed value
in its history (supersede) or a negation or an ending (close), or both kept (distinct).

Printed: precision and recall of each decision ("fold" is reinforce) for both paths, and
the pairs decided otherwise than labelled. Raw results: benchmarks/results/dedup_decisions.json.

``--readd N`` also runs the fault scenario ``readd``: N synthetic facts added, then the
same N again; the second pass must lose no text and rewrite no row.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import write_results

from truemem_core import Memory, TrueMem

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "tests" / "data" / "dedup_pairs.jsonl"
DECISIONS = ("reinforce", "supersede", "close", "distinct")
ENDINGS = ("negated:", "reversed:")  # how a close's history reason starts


def load_pairs(path: Path = PAIRS) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def observed(memory: TrueMem, user: str, old: Memory, new: Memory) -> str:
    """What adding ``new`` did to ``old``, read back from the store and its history."""
    if new.id == old.id:
        return "reinforce"
    [now] = [m for m in memory.list_memories(user, include_archived=True) if m.id == old.id]
    if now.superseded_by != new.id:
        return "distinct"
    why = [e.reason or "" for e in memory.history(user, old.id) if e.action == "superseded"]
    return "close" if why[-1].startswith(ENDINGS) else "supersede"


def one_by_one(memory: TrueMem, user: str, old: str, new: str) -> str:
    stored = memory.add_memory(user, old)
    return observed(memory, user, stored, memory.add_memory(user, new))


def in_bulk(memory: TrueMem, user: str, old: str, new: str) -> str:
    stored, added = memory.add_memories(user, [old, new])
    return observed(memory, user, stored, added)


PATHS: dict[str, Callable[[TrueMem, str, str, str], str]] = {
    "one by one": one_by_one, "bulk": in_bulk}


def decide_all(memory: TrueMem, pairs: Sequence[dict[str, str]]) -> dict[str, list[str]]:
    """Each path's decision for each pair, every pair on its own user."""
    return {name: [path(memory, f"{name}-{n}", p["old"], p["new"]) for n, p in enumerate(pairs)]
            for name, path in PATHS.items()}


def scores(expected: Sequence[str], got: Sequence[str]) -> dict[str, dict[str, float]]:
    """Precision, recall and support of each decision."""
    table = {}
    for decision in DECISIONS:
        hits = sum(e == g == decision for e, g in zip(expected, got, strict=True))
        said, true = got.count(decision), expected.count(decision)
        table[decision] = {"precision": hits / said if said else 1.0,
                           "recall": hits / true if true else 1.0,
                           "support": true, "predicted": said}
    return table


# -- the fault scenario: re-adding a store's facts ---------------------------------------


@dataclass(frozen=True, slots=True)
class Readd:
    facts: int  # texts added, twice
    rows: int  # the user's memories after the first pass, archived too
    rows_after: int  # and after the second
    unkept: int  # texts the first pass kept nowhere (not stored, no row holds all its words)
    lost: int  # texts of the first pass that the second one left nowhere
    rewritten: int  # rows whose text the second pass changed


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def readd(memory: TrueMem, user: str, texts: Sequence[str], *, bulk: bool = True) -> Readd:
    """Add ``texts`` to ``user``, then the same texts again: what the second pass changed.

    ``lost`` and ``rewritten`` must be 0: a restatement only reinforces. ``unkept``
    counts facts the first pass folded into a different fact (a kept text, or a row
    holding all of its words, such as a refinement, counts as kept).
    """
    def add() -> dict[str, str]:
        if bulk:
            memory.add_memories(user, list(texts))
        else:
            for text in texts:
                memory.add_memory(user, text)
        return {m.id: m.text for m in memory.list_memories(user, include_archived=True)}

    before = add()
    stored = [_words(t) for t in before.values()]
    unkept = sum(t not in before.values() and not any(_words(t) <= s for s in stored)
                 for t in dict.fromkeys(texts))
    after = add()
    return Readd(
        facts=len(texts), rows=len(before), rows_after=len(after), unkept=unkept,
        lost=len(set(before.values()) - set(after.values())),
        rewritten=sum(i in after and after[i] != t for i, t in before.items()))


# -- the command ----------------------------------------------------------------------------


def _report(pairs: Sequence[dict[str, str]], decided: dict[str, list[str]]) -> dict[str, Any]:
    expected = [p["expected"] for p in pairs]
    out: dict[str, Any] = {}
    for name, got in decided.items():
        table = scores(expected, got)
        print(f"\n{name}: {sum(e == g for e, g in zip(expected, got, strict=True))}"
              f"/{len(pairs)} decided as labelled")
        print(f"  {'decision':<10} {'precision':>9} {'recall':>7} {'labelled':>8} {'decided':>8}")
        for decision, row in table.items():
            label = "fold" if decision == "reinforce" else decision
            print(f"  {label:<10} {row['precision']:>9.3f} {row['recall']:>7.3f} "
                  f"{row['support']:>8} {row['predicted']:>8}")
        by_category = Counter(p["category"] for p in pairs)
        right = Counter(p["category"] for p, g in zip(pairs, got, strict=True)
                        if g == p["expected"])
        print("  by category: " + ", ".join(
            f"{c} {right[c]}/{n}" for c, n in sorted(by_category.items())))
        wrong = [{**p, "decided": g} for p, g in zip(pairs, got, strict=True)
                 if g != p["expected"]]
        for w in wrong:
            print(f"  - {w['category']}: {w['old']!r} -> {w['new']!r}: "
                  f"{w['decided']}, labelled {w['expected']}")
        out[name] = {"scores": table, "wrong": wrong, "decided": got}
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--database-url", help="a store to use (default: a temporary SQLite)")
    parser.add_argument("--readd", type=int, default=0, metavar="N",
                        help="also re-add N synthetic facts (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="raw results here (default: benchmarks/results/)")
    args = parser.parse_args(argv)
    pairs = load_pairs(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/dedup.db"
        with TrueMem(url) as memory:
            result: dict[str, Any] = {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "pairs": len(pairs), "store": url.split(":", 1)[0],
                "paths": _report(pairs, decide_all(memory, pairs))}
            if args.readd:
                from _common import fact_pool
                texts = [f.text for f in fact_pool(args.readd, args.seed)]
                found = readd(memory, "readd", texts)
                print(f"\nre-adding {args.readd:,} facts (seed {args.seed}): {found}")
                result["readd"] = asdict(found)
    write_results("dedup_decisions", result, args.json)


if __name__ == "__main__":
    main()
