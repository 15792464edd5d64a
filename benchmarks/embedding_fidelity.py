"""Fidelity of the local MiniLM embedder against reference sentence-transformers vectors.

The reference (texts.json + vectors.npy) is made by benchmarks/embedding_reference.py from
the original PyTorch all-MiniLM-L6-v2 in a separate venv. This script needs no torch::

    .venv/bin/python benchmarks/embedding_fidelity.py --reference /tmp/ref

Prints min / p1 / mean cosine to the reference per variant (see minilm_variants.py), one
text at a time and in batches, with the worst texts; exits 1 if the default variant
(``fp32``) has any text below --threshold.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from minilm_variants import VARIANTS, embedder


def cosines(model: Any, texts: list[str], reference: np.ndarray, batch: bool) -> np.ndarray:
    # batch: padded batches of 32, as when storing memories; else one text at a time (queries)
    vectors = model.embed(texts) if batch else np.concatenate([model.embed([t]) for t in texts])
    cos = (vectors * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    return np.asarray(cos, dtype=np.float64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True, help="dir with texts.json")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--threshold", type=float, default=0.999, help="required min cosine")
    parser.add_argument("--worst", type=int, default=5, help="show this many worst texts")
    args = parser.parse_args()

    texts = json.loads((args.reference / "texts.json").read_text(encoding="utf-8"))
    reference = np.load(args.reference / "vectors.npy").astype(np.float32)
    if reference.shape != (len(texts), 384):
        raise SystemExit(f"reference shape {reference.shape} does not match {len(texts)} texts")
    print(f"{len(texts)} reference texts from {args.reference}; threshold {args.threshold}")
    print(f"{'variant':9} {'mode':6} {'min':>9} {'p1':>9} {'mean':>9} {'below':>6}")
    failed = False
    for variant in args.variants.split(","):
        model = embedder(variant)
        for batch in (False, True):
            cos = cosines(model, texts, reference, batch)
            below = int((cos < args.threshold).sum())
            failed |= below > 0 and variant == "fp32"
            mode = "batch" if batch else "single"
            print(
                f"{variant:9} {mode:6} {cos.min():9.6f} {np.percentile(cos, 1):9.6f} "
                f"{cos.mean():9.6f} {below:6d}"
            )
        for i in np.argsort(cos)[: args.worst]:
            print(f"    {cos[i]:.6f}  {texts[i][:70]!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
