"""The built-in model, keeping the texts of each call it is given: for tests that count
what a store embeds, and in how many calls."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from truemem_core.embeddings import default_embedder


class RecordingEmbedder:
    def __init__(self) -> None:
        self.model: Any = default_embedder()
        self.model_name, self.dimension = self.model.model_name, self.model.dimension
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(list(texts))
        return self.model.embed(texts)

    @property
    def seen(self) -> Counter[str]:
        """How many times each text was embedded, over every call."""
        return Counter(text for call in self.calls for text in call)

    def with_any(self, texts: Iterable[str]) -> list[list[str]]:
        """The calls given any of ``texts``."""
        wanted = set(texts)
        return [call for call in self.calls if wanted.intersection(call)]
