"""TrueMem for LangGraph: :class:`TrueMemStore`, a LangGraph ``BaseStore`` on TrueMem.

Agents built with LangGraph or LangChain 1.x (``create_agent(store=...)``) and LangMem
keep long-term memory in a store; this one keeps each item as a JSON document beside a
TrueMem memory of its text, so the store's search is TrueMem's hybrid search and what
an agent stores is also what ``get_context`` recalls.

Install with ``pip install 'truemem[langgraph]'``.
"""

from __future__ import annotations

from truemem_core import MissingDependencyError

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "the LangGraph store needs langgraph: pip install 'truemem[langgraph]'") from exc

from .store import TrueMemStore, TTLNotSupportedError

__all__ = ["TTLNotSupportedError", "TrueMemStore"]
