"""TrueMem for LangChain: thin translations of TrueMem's API into LangChain's interfaces.

- :func:`with_truemem`: any chat model (or chain) with TrueMem's context and recording
- :class:`TrueMemMiddleware`: the same for ``create_agent`` agents (needs ``langchain``)
- :class:`TrueMemChatMessageHistory`: a session as a chat history
- :class:`TrueMemRetriever`: a user's memories as documents
- :class:`TrueMemToolkit`, :func:`memory_tools`: save / search / update / delete tools
  for agents, bound to one user
- :class:`TrueMemLangChainLLM`, :class:`LangChainEmbedder`: LangChain models for TrueMem

Install with ``pip install 'truemem[langchain]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truemem_core import MissingDependencyError, TrueMem

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "the LangChain integration needs langchain-core: pip install 'truemem[langchain]'"
    ) from exc

from .history import TrueMemChatMessageHistory
from .models import LangChainEmbedder, TrueMemLangChainLLM
from .retriever import TrueMemRetriever
from .runnable import TrueMemRunnable, with_truemem
from .tools import TrueMemToolkit, memory_tools

if TYPE_CHECKING:
    from .middleware import TrueMemMiddleware

__all__ = [
    "LangChainEmbedder",
    "TrueMem",
    "TrueMemChatMessageHistory",
    "TrueMemLangChainLLM",
    "TrueMemMiddleware",
    "TrueMemRetriever",
    "TrueMemRunnable",
    "TrueMemToolkit",
    "memory_tools",
    "with_truemem",
]


def __getattr__(name: str) -> Any:
    # The middleware needs the `langchain` package (agents), not only langchain-core:
    # imported on first use, so that the rest works without it.
    if name == "TrueMemMiddleware":
        try:
            from .middleware import TrueMemMiddleware
        except ImportError as exc:
            raise MissingDependencyError(
                "TrueMemMiddleware needs langchain 1.x: pip install 'truemem[langchain]'"
            ) from exc
        return TrueMemMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
