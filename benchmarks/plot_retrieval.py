"""Plot the retrieval-quality results (``retrieval_quality.py --json``) for docs/benchmarks.md.

    .venv/bin/python benchmarks/plot_retrieval.py retrieval.json docs/img/retrieval.svg

Left: LoCoMo overall evidence recall@k per method, with the LoCoMo paper's DRAGON
retriever for reference. Right: LongMemEval_S recall_all and NDCG at 5 and 10.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

DRAGON = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}  # LoCoMo paper, all 10 conversations
METHODS = ("hybrid", "vector", "keyword", "trigram", "bm25")
LME_METRICS = ("recall_all@5", "recall_all@10", "ndcg@5", "ndcg@10")


def plot(results: dict, out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    recall = results["locomo"]["recall"]
    ks = sorted(int(k) for k in recall["hybrid"])
    for method in (m for m in METHODS if m in recall):
        left.plot(ks, [recall[method][str(k)]["overall"] for k in ks], marker="o",
                  label=method, linewidth=2.5 if method == "hybrid" else 1.2)
    left.plot(list(DRAGON), list(DRAGON.values()), "k--", label="DRAGON (paper)")
    left.set(title="LoCoMo dev: evidence recall@k (overall)", xlabel="k", ylabel="recall %",
             xscale="log", xticks=ks, xticklabels=[str(k) for k in ks], ylim=(0, 100))
    left.minorticks_off()
    left.grid(alpha=0.3)
    left.legend(fontsize=8)

    metrics = results["longmemeval"]["metrics"]
    methods = [m for m in METHODS if m in metrics]
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        xs = [j + (i - (len(methods) - 1) / 2) * width for j in range(len(LME_METRICS))]
        right.bar(xs, [metrics[method][m] for m in LME_METRICS], width, label=method)
    right.set(title=f"LongMemEval_S dev ({results['longmemeval']['questions']} questions)",
              xticks=range(len(LME_METRICS)), xticklabels=LME_METRICS, ylim=(0.5, 1.08))
    right.grid(axis="y", alpha=0.3)
    right.legend(fontsize=7, ncols=len(methods), loc="upper center")
    fig.suptitle(f"TrueMem search, {results['embedder']} on {results['database']}", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    plt.rcParams["svg.hashsalt"] = "truemem"  # stable ids: the file diffs cleanly
    fig.savefig(out, metadata={"Date": None})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="JSON written by retrieval_quality.py")
    parser.add_argument("out", type=Path, help="image to write (.svg or .png)")
    args = parser.parse_args()
    plot(json.loads(args.results.read_text()), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
