"""Text into vectors and tokens: the ``Embedder`` protocol, the built-in MiniLM, token counts."""

from truemem_core.embeddings.minilm import MINILM_MODEL_NAME, MiniLMEmbedder, default_embedder
from truemem_core.embeddings.protocol import Embedder, FunctionEmbedder, Vector, normalize
from truemem_core.embeddings.tokens import TiktokenCounter, TokenCounter

__all__ = [
    "MINILM_MODEL_NAME",
    "Embedder",
    "FunctionEmbedder",
    "MiniLMEmbedder",
    "TiktokenCounter",
    "TokenCounter",
    "Vector",
    "default_embedder",
    "normalize",
]
