"""``MemoryDeps``: what every memory operation takes from the layers below, in one value
(the database, its dialect's search channels, the settings, the embedder's model name)."""

from __future__ import annotations

from dataclasses import dataclass

from truemem_core.search.channels import Channels
from truemem_core.settings import Settings
from truemem_core.storage.database import Database


@dataclass(frozen=True, slots=True)
class MemoryDeps:
    db: Database  # the user lock
    channels: Channels  # the nearest memories, for dedup and supersession
    settings: Settings
    model_name: str  # the embedder's, stored with every vector
