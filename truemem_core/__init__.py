"""TrueMem: model-agnostic long-term memory for LLM applications.

The names below are the public API; every module and subpackage behind them is
internal and may change (docs/architecture.md maps them).
"""

from truemem_core._client import TrueMem
from truemem_core.embeddings import (
    Embedder,
    FunctionEmbedder,
    MiniLMEmbedder,
    TiktokenCounter,
    TokenCounter,
    default_embedder,
)
from truemem_core.errors import (
    BrokerError,
    ClosedError,
    DrainTimeoutError,
    EmbedderMismatchError,
    InvalidInputError,
    MissingDependencyError,
    NotFoundError,
    StorageError,
    TrueMemError,
)
from truemem_core.graph.records import (
    CAUSAL_TYPES,
    Entity,
    EntitySpec,
    Graph,
    GraphFacts,
    Hop,
    Observation,
    ObservationSpec,
    Relation,
    RelationSpec,
)
from truemem_core.language import LLM, ChatMessage
from truemem_core.memory.items import StoreItem, item_text
from truemem_core.records import (
    Context,
    Feedback,
    Kind,
    Memory,
    MemoryEvent,
    Message,
    RecalledTurn,
    Recorded,
    ScoredMemory,
    ScoredSynthesis,
    SessionInfo,
    SessionState,
    Source,
    State,
    Synthesis,
    fact_line,
)
from truemem_core.settings import Settings

__all__ = [
    "CAUSAL_TYPES",
    "LLM",
    "BrokerError",
    "ChatMessage",
    "ClosedError",
    "Context",
    "DrainTimeoutError",
    "Embedder",
    "EmbedderMismatchError",
    "Entity",
    "EntitySpec",
    "Feedback",
    "FunctionEmbedder",
    "Graph",
    "GraphFacts",
    "Hop",
    "InvalidInputError",
    "Kind",
    "Memory",
    "MemoryEvent",
    "Message",
    "MiniLMEmbedder",
    "MissingDependencyError",
    "NotFoundError",
    "Observation",
    "ObservationSpec",
    "RecalledTurn",
    "Recorded",
    "Relation",
    "RelationSpec",
    "ScoredMemory",
    "ScoredSynthesis",
    "SessionInfo",
    "SessionState",
    "Settings",
    "Source",
    "State",
    "StorageError",
    "StoreItem",
    "Synthesis",
    "TiktokenCounter",
    "TokenCounter",
    "TrueMem",
    "TrueMemError",
    "default_embedder",
    "fact_line",
    "item_text",
]
