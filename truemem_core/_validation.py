"""Argument checks shared by every entry point; each raises ``InvalidInputError``."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from truemem_core.errors import InvalidInputError
from truemem_core.records import KINDS, SOURCES, Kind, Source

# Control (Cc, incl. NUL), format (Cf: zero-width, bidi marks) and lone surrogates (Cs):
# an id holding one looks like another id, or cannot be stored on every backend.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})
# ... and separators: a text of only these says nothing (zero-width spaces, a BOM)
_BLANK = _INVISIBLE | {"Zs", "Zl", "Zp"}


MAX_ROWS = 2**62  # a count asked for beyond any store's size: a 64-bit SQL integer holds it
# How far ahead of this machine's clock an imported time may be: the exporting machine's
# clock may run a little ahead; a time later than this was never recorded.
CLOCK_SKEW = timedelta(minutes=5)


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
    if value in (".", ".."):  # in a URL, a path step: ``/sessions/..`` is the user
        raise InvalidInputError(f"{what} cannot be {value!r}")
    return value


def says_nothing(value: Any) -> bool:
    """A str with no visible character (spaces, zero-width and format characters, a BOM),
    which is what a tool-calling model's reply holds. A NUL or an unpaired surrogate is
    no blank: it is text no backend can store."""
    return isinstance(value, str) and all(
        unicodedata.category(c) in _BLANK and unicodedata.category(c) != "Cs" and c != "\x00"
        for c in value)


def check_user_id(value: Any, max_chars: int, what: str = "user_id") -> str:
    """A user id in NFC: ``cafe\u0301`` and ``caf\u00e9`` are one user. Space around it is
    refused rather than stripped: ``"ana "`` and ``"ana"`` look alike in every listing."""
    user = unicodedata.normalize("NFC", check_id(value, what, max_chars))
    if user != user.strip():
        raise InvalidInputError(f"{what} has a space at its start or end: {value!r}")
    if len(user) > max_chars:  # NFC of a few scripts is longer than the text given
        raise InvalidInputError(f"{what} is longer than {max_chars} characters")
    return user


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
    if all(unicodedata.category(c) in _BLANK for c in text):  # stops at the first visible
        raise InvalidInputError(f"{what} has no visible character")
    if "\x00" in text:
        raise InvalidInputError(f"{what} contains a NUL character, which cannot be stored")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} contains an unpaired surrogate (not valid Unicode text)") from exc
    return text


def is_storable(text: str) -> bool:
    """Whether every backend can store ``text``: no NUL, no unpaired surrogate."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_storable(value: str, what: str) -> str:
    """``value`` when every backend can store and compare it (a filter too: PostgreSQL
    refuses a NUL even in a comparison), else ``InvalidInputError``."""
    if not is_storable(value):
        raise InvalidInputError(
            f"{what} contains a NUL character or an unpaired surrogate, which cannot be stored")
    return value


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


def check_k(value: Any, what: str = "k") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{what} must be a positive int, got {value!r}")
    return min(value, MAX_ROWS)


def check_count(value: Any, what: str, least: int) -> int:
    """An int >= ``least`` (a limit, an offset), capped at ``MAX_ROWS``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidInputError(f"{what} must be an int >= {least}, got {value!r}")
    return min(value, MAX_ROWS)


def optional_int(value: Any, what: str) -> int | None:
    """None, or an int (not a bool): an id of a document that may not carry one."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise InvalidInputError(f"{what} must be an int, got {type(value).__name__}")


def check_progress(value: Any) -> Callable[[int, int], None]:
    """A progress callback, ``progress(done, total)``: the one given, or one that does
    nothing for ``None``."""
    if value is None:
        return lambda done, total: None
    if not callable(value):
        raise InvalidInputError(
            f"progress must be a callable progress(done, total), got {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def check_instant(value: Any, what: str, *, parse: bool = False) -> datetime:
    """A timezone-aware datetime that has a UTC equivalent (``parse``: an ISO 8601 text
    with an offset too); returned as given."""
    if parse and isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise InvalidInputError(f"{what} is not an ISO 8601 date and time") from exc
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{what} must be timezone-aware (e.g. tzinfo=UTC)")
    try:  # the databases store UTC: datetime.max at -14:00 has no UTC equivalent
        value.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidInputError(
            f"{what} is out of range once in UTC: {value.isoformat()}") from exc
    return value


def parse_time(value: Any, what: str, *, future: bool = False) -> datetime:
    """A time of an export document: ISO 8601 text, UTC when it has no offset; not in
    the future (``check_recorded``) unless ``future`` (a fact's validity may be)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be an ISO 8601 text, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what} is not an ISO 8601 date and time") from exc
    found = check_instant(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC), what)
    return found if future else check_recorded(found, what)


def check_recorded(value: datetime, what: str) -> datetime:
    """An imported time something was recorded at: no later than now (``CLOCK_SKEW``)."""
    if value > datetime.now(UTC) + CLOCK_SKEW:
        raise InvalidInputError(f"{what} is in the future: {value.isoformat()}")
    return value


def check_created_first(created: datetime | None, updated: datetime | None) -> None:
    """An imported record's ``created_at`` is no later than its ``updated_at``."""
    if created is not None and updated is not None and created > updated:
        raise InvalidInputError(
            f"created_at {created.isoformat()} is after updated_at {updated.isoformat()}")


def malformed(where: str, exc: Exception) -> InvalidInputError:
    """``where`` (a part of a document) is malformed: ``exc`` (a KeyError, TypeError,
    AttributeError or ValueError of reading it) told in the document's words."""
    if isinstance(exc, KeyError):
        detail = f"it has no {exc.args[0]!r}" if exc.args else "a field is missing"
    elif isinstance(exc, ValueError):
        detail = str(exc)
    else:  # Python's own words name its types, not the document's
        detail = "a field has the wrong type"
    return InvalidInputError(f"{where} is malformed: {detail}")
