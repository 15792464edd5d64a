"""LangChain models as TrueMem's: any chat model for extraction, any embeddings for vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import convert_to_messages

from truemem_core import ChatMessage
from truemem_core.embeddings import Vector


class TrueMemLangChainLLM:
    """Any LangChain chat model as the LLM TrueMem uses for extraction and summaries.

    ``TrueMem(..., llm=TrueMemLangChainLLM(ChatOpenAI(model="gpt-4o-mini")))``.
    """

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        prompt = convert_to_messages([(m["role"], m["content"]) for m in messages])
        reply = await self.model.ainvoke(prompt)
        return str(reply.text)


def _model_attribute(embeddings: Embeddings) -> str | None:
    for name in ("model", "model_name", "model_id", "deployment"):
        value = getattr(embeddings, name, None)
        if isinstance(value, str) and value:
            return value
    return None


class LangChainEmbedder:
    """Any LangChain ``Embeddings`` as TrueMem's embedder.

    ``model_name`` names the vector space (stored with every vector, so a store is
    never searched with another model's vectors); by default it is the class name
    and the model attribute, e.g. ``"OpenAIEmbeddings:text-embedding-3-small"``.
    ``dimension`` is measured with one call the first time it is needed, unless given.
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        model_name: str | None = None,
        dimension: int | None = None,
    ) -> None:
        self.embeddings = embeddings
        model = _model_attribute(embeddings)
        self._model_name = model_name or ":".join(
            part for part in (type(embeddings).__name__, model) if part)
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
            self.embeddings.embed_documents(list(texts)), dtype=np.float32)
        return vectors
