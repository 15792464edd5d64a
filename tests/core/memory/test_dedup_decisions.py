"""The labelled pairs of tests/data/dedup_pairs.jsonl through the real write path: floors
on the precision and recall of each decision (benchmarks/dedup_decisions.py prints them).

Before issue 49's rule a negation folded as a restatement: fold precision was 0.40 and
no fact was ever closed by a negation or an ending (close recall 0)."""

from __future__ import annotations

import sys
from pathlib import Path

from truemem_core import TrueMem

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from dedup_decisions import decide_all, load_pairs, scores

# measured 2026-12-05: fold 0.952 / 0.870, supersede 1.000 / 0.933, close 1.000 / 0.906,
# distinct 0.821 / 0.970, on both paths
FLOORS = {"reinforce": (0.95, 0.85), "supersede": (0.95, 0.9), "close": (0.95, 0.85),
          "distinct": (0.8, 0.95)}


def test_each_decision_keeps_its_precision_and_recall(store_url: str) -> None:
    pairs = load_pairs()
    assert len(pairs) >= 80
    expected = [p["expected"] for p in pairs]
    with TrueMem(store_url) as memory:
        decided = decide_all(memory, pairs)
    assert decided["one by one"] == decided["bulk"]  # one decision, whichever path
    table = scores(expected, decided["bulk"])
    for decision, (precision, recall) in FLOORS.items():
        got = table[decision]
        assert got["precision"] >= precision and got["recall"] >= recall, (decision, got)
