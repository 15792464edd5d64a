"""``memory_tools``: memory tools for LlamaIndex agents (``FunctionAgent(tools=...)``).

``save_memory``, ``search_memories``, ``update_memory`` and ``delete_memory`` as
``FunctionTool``s bound to one user, each with a sync and an async body; what they do
and say is in ``truemem_integrations/_memory_tools.py``.
"""

from __future__ import annotations

from llama_index.core.tools import FunctionTool

from truemem_core import TrueMem
from truemem_integrations._memory_tools import DESCRIPTIONS, MemoryTools


def memory_tools(memory: TrueMem, user_id: str, *, k: int = 5) -> list[FunctionTool]:
    """The four memory tools for ``user_id``; a search returns up to ``k`` memories."""
    bodies = MemoryTools(memory, user_id, k=k)
    return [FunctionTool.from_defaults(fn=sync, async_fn=run, name=name,
                                       description=DESCRIPTIONS[name])
            for name, sync, run in bodies.pairs()]
