"""What every memory operation needs from the layers below, in one value."""

from __future__ import annotations

from dataclasses import dataclass

from truemem_core.search.channels import Channels
from truemem_core.settings import Settings
from truemem_core.storage.database import Database


@dataclass(frozen=True, slots=True)
class MemoryEnv:
    db: Database  # the user lock
    channels: Channels  # nearest neighbours for dedup and supersession
    settings: Settings
    model_name: str  # the embedder's, stored with every vector
