"""TrueMem for LlamaIndex: thin translations of TrueMem's API into LlamaIndex's interfaces.

- :class:`TrueMemMemory`: ``memory=`` for chat engines and agents
- :class:`TrueMemMemoryBlock`: a block for ``llama_index.core.memory.Memory``
- :class:`LlamaIndexLLM`, :class:`LlamaIndexEmbedder`: LlamaIndex models for TrueMem
- :func:`memory_tools`: save / search / update / delete ``FunctionTool``s for agents,
  bound to one user

Install with ``pip install 'truemem[llamaindex]'``.
"""

from __future__ import annotations

from truemem_core import MissingDependencyError, TrueMem

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "the LlamaIndex integration needs llama-index-core: pip install 'truemem[llamaindex]'"
    ) from exc

from .block import TrueMemMemoryBlock
from .memory import TrueMemMemory
from .models import LlamaIndexEmbedder, LlamaIndexLLM
from .tools import memory_tools

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "TrueMem",
    "TrueMemMemory",
    "TrueMemMemoryBlock",
    "memory_tools",
]
