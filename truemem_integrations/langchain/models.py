"""LangChain models as TrueMem's: any chat model for extraction, any embeddings for vectors."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import convert_to_messages

from truemem_core import ChatMessage, FunctionEmbedder


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


class LangChainEmbedder(FunctionEmbedder):
    """Any LangChain ``Embeddings`` as TrueMem's embedder.

    By default ``model_name`` is the class name and the model attribute, e.g.
    ``"OpenAIEmbeddings:text-embedding-3-small"``; see ``FunctionEmbedder``.
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
        super().__init__(
            embeddings.embed_documents,
            model_name=model_name or ":".join(
                part for part in (type(embeddings).__name__, model) if part),
            dimension=dimension,
        )
