"""Who an MCP tool call acts for (``Caller``), shared by the memory tools
(``mcp_server``) and the knowledge graph's (``mcp_graph``), which import it from here
and not from each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from truemem_core import TrueMem
from truemem_server.message_ids import MessageIds


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a tool call acts for: the store, the user's storage id, whether it may write,
    and how message ids are shown (``message_ids``; None: ``build_server`` reads the
    store's)."""

    memory: TrueMem
    user: str
    read_only: bool = False
    ids: MessageIds | None = None

    @property
    def message_ids(self) -> MessageIds:
        if self.ids is None:  # pragma: no cover - build_server gives every tool its ids
            raise RuntimeError("a Caller without message ids")
        return self.ids


CallerOf = Callable[[], Awaitable[Caller]]
