"""The built-in embedder batches texts of like lengths in tokens, whatever their lengths
in characters: a batch is as long as its longest text, so a text of few tokens batched
with long ones costs as much as they do."""

from __future__ import annotations

from typing import Any

import numpy as np

from truemem_core import MiniLMEmbedder
from truemem_core.embeddings import default_embedder


class Watched(MiniLMEmbedder):
    """The built-in model, recording the shape of each batch it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[int, int]] = []

    def _new_session(self, model: bytes | str) -> Any:
        session, shapes = super()._new_session(model), self.shapes

        class Recording:
            def run(self, names: Any, feeds: dict[str, Any]) -> Any:
                shapes.append(feeds["input_ids"].shape)
                return session.run(names, feeds)
        return Recording()


def test_texts_are_batched_by_their_tokens_not_their_characters() -> None:
    """Sixty-four texts whose lengths in characters interleave: half are one long word
    (three tokens with [CLS] and [SEP]), half a hundred tokens. Batched by characters,
    every batch mixed them (padded to about twice their tokens); by tokens, the short
    ones share a batch."""
    few = ["x" * (300 + 10 * n) for n in range(32)]  # one word too long to split: [UNK]
    many = [" ".join(["go"] * 98) + " " * (5 + 10 * n) for n in range(32)]  # 100 tokens
    texts = [text for pair in zip(few, many, strict=True) for text in pair]
    embedder = Watched()
    vectors = embedder.embed(texts)
    tokens = sum(len(encoding.ids) for encoding in embedder._encode(texts))
    padded = sum(rows * width for rows, width in embedder.shapes)
    assert padded <= 1.1 * tokens, (padded, tokens)
    alone = default_embedder()
    for text, vector in zip(texts, vectors, strict=True):
        assert np.allclose(vector, alone.embed([text])[0], atol=1e-5)
