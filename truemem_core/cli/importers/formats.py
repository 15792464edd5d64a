"""Pure parsers of other memory systems' exports into ``PeerRecord``s.

mem0: the list ``Memory.get_all()`` returns (v1: a JSON array; v1.1 and the platform:
``{"results": [...]}``), each ``{"id", "memory", "user_id", "hash", "metadata",
"created_at", "updated_at", ...}``; or the rows of its pgvector collection
(``id``, ``vector``, ``payload`` with ``data``, ``user_id``, ``hash``,
``created_at``, ``updated_at``, ...) dumped as a JSON array, JSON Lines or CSV.
LangMem: a LangGraph store's items, ``Item.dict()``'s ``{"namespace": [...], "key",
"value", "created_at", "updated_at"}`` or the rows of ``PostgresStore``'s ``store``
table (``prefix`` "a.b", ``key``, ``value``, ...), in the same three encodings.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from truemem_core import InvalidInputError, PeerRecord, item_text

FORMATS = ("mem0", "langmem")
MEM0_NAMESPACE = "mem0"  # mem0 memories are kept as store items at ("mem0", user_id)
_NOT_KEPT = {"vector", "embedding", "score"}  # re-embedded here; a search score is no data
CSV_FIELD_CHARS = 1 << 26  # a pgvector dump's vector column is longer than csv's default


def load_json(text: str) -> Any:
    """``json.loads``; a document nested too deeply for it is an ``InvalidInputError`` (a
    ``ValueError`` as the parser's own errors are, which callers say where it was)."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise InvalidInputError("nested too deeply to read") from exc


def rows_of(text: str, name: str) -> list[Any]:
    """The rows of a JSON array (or an object holding one under ``results``, ``items``
    or ``memories``), of JSON Lines, or of CSV with a header line. A leading byte order
    mark is not part of the text."""
    stripped = text.removeprefix("\ufeff").lstrip()
    try:
        if stripped.startswith(("[", "{")):
            try:
                data = load_json(stripped)
            except ValueError as exc:
                if stripped.startswith("["):
                    raise InvalidInputError(f"{name} is not a JSON array ({exc})") from exc
                data = None  # JSON Lines: one object a line
            if isinstance(data, list):
                return data
            if isinstance(data, Mapping):
                for field in ("results", "items", "memories"):
                    if isinstance(data.get(field), list):
                        return list(data[field])
                return [data]
            return [row for _, row in json_lines(text, name)]
        if csv.field_size_limit() < CSV_FIELD_CHARS:
            csv.field_size_limit(CSV_FIELD_CHARS)
        return list(csv.DictReader(io.StringIO(stripped)))
    except ValueError as exc:
        raise InvalidInputError(
            f"{name} is neither JSON, JSON Lines nor CSV with a header ({exc})") from exc


def json_lines(text: str, name: str) -> list[tuple[int, Any]]:
    """Each non-blank line of ``text`` parsed as JSON, with its line number; a line that
    is not JSON is an ``InvalidInputError`` naming it (the parser's own "line 1" is the
    line's)."""
    parsed = []
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        if line.strip():
            try:
                parsed.append((number, load_json(line)))
            except ValueError as exc:
                column = f", column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
                message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise InvalidInputError(
                    f"{name} line {number}{column} is not JSON: {message}") from exc
    return parsed


def _object(value: Any, what: str) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = load_json(value)
        except ValueError as exc:
            raise InvalidInputError(f"{what} is not JSON: {exc}") from exc
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a JSON object, got {type(value).__name__}")
    return dict(value)


def instant(value: Any, what: str) -> datetime | None:
    """An ISO 8601 time (naive: UTC), a Unix time in seconds, or None."""
    if value in (None, ""):
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError) as exc:
        raise InvalidInputError(f"{what} is not a time: {value!r}") from exc
    return PeerRecord.check_time(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC), what)


def times(fields: Any, what: str) -> dict[str, datetime | None]:
    """A record's ``created_at`` and ``updated_at`` (``instant``), the one not after the other."""
    found = {name: instant(fields.get(name), f"{what} {name}")
             for name in ("created_at", "updated_at")}
    try:
        PeerRecord.check_times(found["created_at"], found["updated_at"])
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what}: {exc}") from exc
    return found


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} has no text")
    return value.strip()


def _user(found: Any, user: str | None, what: str) -> str:
    if user is not None:
        return user
    if not isinstance(found, str) or not found.strip():
        raise InvalidInputError(f"{what} has no user_id: pass --user to name its user")
    return found


def mem0_record(row: Any, n: int, user: str | None) -> PeerRecord:
    """One row of a mem0 export: a ``get_all`` memory or a pgvector collection row."""
    what = f"record {n}"
    row = _object(row, what)
    if "payload" in row:  # a row of the vector store's table
        fields = _object(row["payload"], f"{what} payload")
        text = _text(fields.get("data"), what)
    else:
        fields = row
        text = _text(fields.get("memory", fields.get("data")), what)
    key = str(row.get("id") or fields.get("id") or "")
    if not key:
        raise InvalidInputError(f"{what} has no id")
    owner = _user(fields.get("user_id"), user, what)
    value = {k: v for k, v in fields.items() if k not in _NOT_KEPT | {"data"}}
    value = PeerRecord.check_value({**value, "id": key, "memory": text}, what)
    return PeerRecord(
        user_id=owner, namespace=(MEM0_NAMESPACE, owner), key=key, value=value, text=text,
        **times(fields, what))


def langmem_text(value: Mapping[str, Any]) -> str:
    """What a LangMem item says, as ``TrueMemStore`` indexes it (``item_text``)."""
    return item_text(value).strip()


def langmem_record(row: Any, n: int, user: str | None, user_at: int) -> PeerRecord:
    """One item of a LangGraph store: ``Item.dict()`` or a ``store`` table row."""
    what = f"record {n}"
    row = _object(row, what)
    namespace = row.get("namespace", row.get("prefix"))
    if isinstance(namespace, str):
        namespace = namespace.split(".")
    if not isinstance(namespace, Sequence) or not all(isinstance(s, str) for s in namespace):
        raise InvalidInputError(f"{what} has no namespace (a list of labels, or a prefix)")
    labels = list(namespace)
    if len(labels) <= user_at:
        raise InvalidInputError(
            f"{what}: namespace {tuple(labels)!r} has no user label at position {user_at} "
            "(set --user-at)")
    if user is not None:
        labels[user_at] = user
    key = row.get("key")
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"{what} has no key")
    value = PeerRecord.check_value(_object(row.get("value"), f"{what} value"), f"{what} value")
    return PeerRecord(
        user_id=labels[user_at], namespace=tuple(labels), key=key, value=value,
        text=_text(langmem_text(value), what),
        **times(row, what))


def parse(
    source: str, text: str, name: str, *, user: str | None = None, user_at: int = 1
) -> list[PeerRecord]:
    """Every record of an export of ``source`` ("mem0" or "langmem"); the first bad
    record raises ``InvalidInputError`` naming it, before anything is written."""
    if source not in FORMATS:
        raise InvalidInputError(f"--from must be one of {', '.join(FORMATS)}, got {source!r}")
    rows = rows_of(text, name)
    if source == "mem0":
        return [mem0_record(row, n, user) for n, row in enumerate(rows, 1)]
    return [langmem_record(row, n, user, user_at) for n, row in enumerate(rows, 1)]
