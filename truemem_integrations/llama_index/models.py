"""LlamaIndex models as TrueMem's: any LLM for extraction, any embedding model for vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM as LlamaLLM

from truemem_core import ChatMessage
from truemem_core.embeddings import Vector

from ._messages import chat_message


class LlamaIndexLLM:
    """Any LlamaIndex LLM as the LLM TrueMem uses for extraction and summaries.

    ``TrueMem(..., llm=LlamaIndexLLM(OpenAI(model="gpt-4o-mini")))``.
    """

    def __init__(self, llm: LlamaLLM) -> None:
        self.llm = llm

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        response = await self.llm.achat([chat_message(m["role"], m["content"]) for m in messages])
        return response.message.content or ""


class LlamaIndexEmbedder:
    """Any LlamaIndex ``BaseEmbedding`` as TrueMem's embedder.

    ``model_name`` names the vector space (stored with every vector); by default it
    is the class and model names, e.g. ``"OpenAIEmbedding:text-embedding-3-small"``.
    ``dimension`` is measured with one call the first time it is needed, unless given.
    """

    def __init__(
        self,
        embed_model: BaseEmbedding,
        *,
        model_name: str | None = None,
        dimension: int | None = None,
    ) -> None:
        self.embed_model = embed_model
        self._model_name = model_name or f"{type(embed_model).__name__}:{embed_model.model_name}"
        self._dimension = dimension

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        vectors: Vector = np.asarray(
            self.embed_model.get_text_embedding_batch(list(texts)), dtype=np.float32)
        return vectors
