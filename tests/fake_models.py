"""Scripted chat models for both frameworks that keep every prompt they receive."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from pydantic import Field


def _next(replies: list[Any]) -> Any:
    """The queued replies in order; the last one repeats."""
    return replies.pop(0) if len(replies) > 1 else replies[0]


class CapturingChatModel(BaseChatModel):
    """A LangChain chat model answering with scripted replies; ``prompts`` holds its inputs."""

    replies: list[str | AIMessage] = Field(default_factory=lambda: ["OK."])
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "capturing-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None,
        run_manager: Any = None, **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        reply = _next(self.replies)
        message = reply.model_copy() if isinstance(reply, AIMessage) else AIMessage(reply)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> CapturingChatModel:
        return self  # the script decides when to call a tool

    def prompt_text(self, index: int = -1) -> str:
        return "\n".join(str(m.text) for m in self.prompts[index])


class CapturingLLM(CustomLLM):
    """A LlamaIndex chat LLM answering with scripted replies; ``prompts`` holds its inputs."""

    replies: list[str] = Field(default_factory=lambda: ["OK."])
    prompts: list[list[ChatMessage]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True, context_window=8192)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.prompts.append([m.model_copy(deep=True) for m in messages])
        return ChatResponse(message=ChatMessage(role="assistant", content=_next(self.replies)))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self.chat(messages, **kwargs)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append([ChatMessage(role="user", content=prompt)])
        return CompletionResponse(text=_next(self.replies))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        response = self.complete(prompt)
        yield CompletionResponse(text=response.text, delta=response.text)

    def prompt_text(self, index: int = -1) -> str:
        return "\n".join(m.content or "" for m in self.prompts[index])


def hashed_vector(text: str, size: int = 16) -> list[float]:
    """A deterministic pseudo-embedding: different texts, different directions."""
    digest = hashlib.sha256(text.encode()).digest()
    return [byte / 255 - 0.5 for byte in digest[:size]]


class HashEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model with deterministic, text-dependent vectors."""

    model_name: str = "hash-16"

    def _get_query_embedding(self, query: str) -> list[float]:
        return hashed_vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return hashed_vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hashed_vector(text)
