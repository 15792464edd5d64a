"""TrueMem: model-agnostic long-term memory for LLM applications."""

from .client import TrueMem
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
from .models import Memory, MemoryEvent, ScoredMemory
from .settings import Settings
from .tokens import TiktokenCounter, TokenCounter

__all__ = [
    "BrokerError",
    "Embedder",
    "EmbedderMismatchError",
    "InvalidInputError",
    "Memory",
    "MemoryEvent",
    "MiniLMEmbedder",
    "MissingDependencyError",
    "NotFoundError",
    "ScoredMemory",
    "Settings",
    "StorageError",
    "TiktokenCounter",
    "TokenCounter",
    "TrueMem",
    "TrueMemError",
    "default_embedder",
]
