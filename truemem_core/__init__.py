"""TrueMem: model-agnostic long-term memory for LLM applications."""

from .client import TrueMem
from .context import Context
from .conversation import Message, SessionState
from .embeddings import Embedder, MiniLMEmbedder, default_embedder
from .errors import (
    BrokerError,
    EmbedderMismatchError,
    InvalidInputError,
    MissingDependencyError,
    NotFoundError,
    StorageError,
    TrueMemError,
)
from .extraction import LLM, ChatMessage
from .models import Memory, MemoryEvent, ScoredMemory
from .pipeline import Recorded
from .settings import Settings
from .tokens import TiktokenCounter, TokenCounter

__all__ = [
    "LLM",
    "BrokerError",
    "ChatMessage",
    "Context",
    "Embedder",
    "EmbedderMismatchError",
    "InvalidInputError",
    "Memory",
    "MemoryEvent",
    "Message",
    "MiniLMEmbedder",
    "MissingDependencyError",
    "NotFoundError",
    "Recorded",
    "ScoredMemory",
    "SessionState",
    "Settings",
    "StorageError",
    "TiktokenCounter",
    "TokenCounter",
    "TrueMem",
    "TrueMemError",
    "default_embedder",
]
