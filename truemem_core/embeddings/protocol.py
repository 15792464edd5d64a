"""What an embedder is: the ``Embedder`` protocol, vectors, and a wrapper for any function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

Vector = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Any object with these three members will do.

    One may also have a ``load()`` method (the built-in embedder has): a store calls it
    as it opens, so that a local model is loaded before calls arrive, not during one.
    And an ``embed_queries(texts)`` method (or attribute, ``None`` for none): search
    queries are then embedded with it (``MiniLMEmbedder(int8_queries=True)``), and a
    query's vector is never stored as a text's.
    """

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
