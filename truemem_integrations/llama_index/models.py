"""LlamaIndex models as TrueMem's: any LLM for extraction, any embedding model for vectors."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM as LlamaLLM

from truemem_core import ChatMessage, FunctionEmbedder

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


class LlamaIndexEmbedder(FunctionEmbedder):
    """Any LlamaIndex ``BaseEmbedding`` as TrueMem's embedder.

    By default ``model_name`` is the class and model names, e.g.
    ``"OpenAIEmbedding:text-embedding-3-small"``; see ``FunctionEmbedder``.
    """

    def __init__(
        self,
        embed_model: BaseEmbedding,
        *,
        model_name: str | None = None,
        dimension: int | None = None,
    ) -> None:
        self.embed_model = embed_model
        super().__init__(
            embed_model.get_text_embedding_batch,
            model_name=model_name or f"{type(embed_model).__name__}:{embed_model.model_name}",
            dimension=dimension,
        )
