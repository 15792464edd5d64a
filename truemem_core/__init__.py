"""TrueMem: model-agnostic long-term memory for LLM applications.

The names below are the public API; every module and subpackage behind them is
internal and may change (docs/architecture.md maps them).
"""

from truemem_core._client import TrueMem
from truemem_core._validation import check_storable, check_user_id
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
from truemem_core.jobs.broker import check_redis_url
from truemem_core.language import LLM, ChatMessage
from truemem_core.memory.items import StoreItem, item_text
from truemem_core.memory.peer_import import ImportReport, PeerRecord
from truemem_core.records import (
    Action,
    Context,
    Feedback,
    Kind,
    Memory,
    MemoryEvent,
    Message,
    RecalledTurn,
    Recorded,
    Role,
    ScoredMemory,
    ScoredSynthesis,
    SessionInfo,
    SessionState,
    Source,
    State,
    Synthesis,
    UserInfo,
    fact_line,
    synthesis_line,
)
from truemem_core.search.filters import SearchFilters
from truemem_core.settings import Settings
from truemem_core.storage.database import require_store, resolve_url, store_exists
from truemem_core.storage.failures import is_outage
from truemem_core.storage.shared import StoreDatabase, UTCDateTime

__all__ = [
    "CAUSAL_TYPES",
    "LLM",
    "Action",
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
    "ImportReport",
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
    "PeerRecord",
    "RecalledTurn",
    "Recorded",
    "Relation",
    "RelationSpec",
    "Role",
    "ScoredMemory",
    "ScoredSynthesis",
    "SearchFilters",
    "SessionInfo",
    "SessionState",
    "Settings",
    "Source",
    "State",
    "StorageError",
    "StoreDatabase",
    "StoreItem",
    "Synthesis",
    "TiktokenCounter",
    "TokenCounter",
    "TrueMem",
    "TrueMemError",
    "UTCDateTime",
    "UserInfo",
    "check_redis_url",
    "check_storable",
    "check_user_id",
    "default_embedder",
    "fact_line",
    "is_outage",
    "item_text",
    "require_store",
    "resolve_url",
    "store_exists",
    "synthesis_line",
]
