"""``TrueMemToolkit``: memory tools for LangChain agents, bound to one user.

``save_memory``, ``search_memories``, ``update_memory`` and ``delete_memory``, each a
``StructuredTool`` with a sync and an async body (``create_agent(tools=...)`` uses
either); what they do and say is in ``truemem_integrations/_memory_tools.py``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool
from pydantic import ConfigDict

from truemem_core import TrueMem
from truemem_integrations._memory_tools import DESCRIPTIONS, MemoryTools


def memory_tools(memory: TrueMem, user_id: str, *, k: int = 5) -> list[BaseTool]:
    """The four memory tools for ``user_id``; a search returns up to ``k`` memories."""
    bodies = MemoryTools(memory, user_id, k=k)
    return [StructuredTool.from_function(func=sync, coroutine=run, name=name,
                                         description=DESCRIPTIONS[name])
            for name, sync, run in bodies.pairs()]


class TrueMemToolkit(BaseToolkit):
    """``TrueMemToolkit(memory=tm, user_id="ana").get_tools()``: the four memory tools."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    user_id: str
    k: int = 5

    def get_tools(self) -> list[BaseTool]:
        return memory_tools(self.memory, self.user_id, k=self.k)
