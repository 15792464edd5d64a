"""Argument checks shared by every entry point; each raises ``InvalidInputError``."""

from __future__ import annotations

from typing import Any

from .errors import InvalidInputError
from .models import KINDS, SOURCES, Kind, Source


def check_id(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(f"{what} must not be empty")
    if len(value) > max_chars:
        raise InvalidInputError(f"{what} is longer than {max_chars} characters")
    return value


def check_text(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a str, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise InvalidInputError(f"{what} is empty: give the fact as a short sentence")
    if len(text) > max_chars:
        raise InvalidInputError(
            f"{what} has {len(text)} characters; the limit is {max_chars} "
            "(store a short fact, or raise Settings.max_text_chars)"
        )
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
