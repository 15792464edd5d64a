"""Argument checks shared by every entry point; each raises ``InvalidInputError``."""

from __future__ import annotations

import unicodedata
from typing import Any

from truemem_core.errors import InvalidInputError
from truemem_core.records import KINDS, SOURCES, Kind, Source

# Control (Cc, incl. NUL), format (Cf: zero-width, bidi marks) and lone surrogates (Cs):
# an id holding one looks like another id, or cannot be stored on every backend.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})


def check_id(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(f"{what} must not be empty")
    if len(value) > max_chars:
        raise InvalidInputError(f"{what} is longer than {max_chars} characters")
    if any(unicodedata.category(c) in _INVISIBLE for c in value):
        raise InvalidInputError(
            f"{what} has a control, invisible or unpaired-surrogate character: "
            "ids must be printable text")
    return value


def check_text(
    value: Any, what: str, max_chars: int, *, setting: str = "max_text_chars"
) -> str:
    """A stripped, non-empty text within ``max_chars`` that every backend can store.

    ``setting`` names the ``Settings`` field behind ``max_chars``, for the message.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a str, got {type(value).__name__}")
    if len(value) > max_chars:  # checked first: nothing below runs on an oversized input
        raise InvalidInputError(
            f"{what} has {len(value)} characters; the limit is {max_chars} "
            f"(send less, or raise Settings.{setting})"
        )
    text = value.strip()
    if not text:
        raise InvalidInputError(f"{what} is empty")
    if "\x00" in text:
        raise InvalidInputError(f"{what} contains a NUL character, which cannot be stored")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} contains an unpaired surrogate (not valid Unicode text)") from exc
    return text


def check_importance(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise InvalidInputError(f"importance must be an int from 1 to 5, got {value!r}")
    return value


def check_kind(value: Any) -> Kind:
    if value not in KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(KINDS)}; got {value!r}")
    return value  # type: ignore[no-any-return]


def check_source(value: Any) -> Source:
    if value not in SOURCES:
        raise InvalidInputError(f"source must be one of {', '.join(SOURCES)}; got {value!r}")
    return value  # type: ignore[no-any-return]


def check_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"k must be a positive int, got {value!r}")
    return value
