"""Database failures in words: what went wrong, never the SQL, parameters or paths.

The driver's exception stays chained as ``__cause__`` for logs; ``str(error)``
is safe to show a user or return from a service.
"""

from __future__ import annotations

from sqlalchemy import exc as sa

from truemem_core.errors import StorageError

# SQLSTATE classes and codes (PostgreSQL) that say what happened.
_CONFLICT_CODES = {"40001": "a concurrent write conflicted with this one; try again",
                   "40P01": "a concurrent write deadlocked with this one; try again"}
_UNAVAILABLE_CLASSES = ("08", "53", "57")  # connection, resources, operator intervention


def storage_error(error: BaseException) -> StorageError:
    """A ``StorageError`` that says in words what failed (chain the original yourself)."""
    return StorageError(f"database error: {_describe(error)}")


def _describe(error: BaseException) -> str:
    original = getattr(error, "orig", None)
    code = getattr(original, "sqlstate", None) or getattr(
        getattr(original, "diag", None), "sqlstate", None)
    if isinstance(code, str):
        if code in _CONFLICT_CODES:
            return _CONFLICT_CODES[code]
        if code.startswith(_UNAVAILABLE_CLASSES):
            return "the database is unreachable or the connection was lost"
    if isinstance(error, sa.TimeoutError):
        return "no database connection became free in time"
    if isinstance(error, sa.IntegrityError):
        return "the write conflicts with stored data (a uniqueness or integrity rule)"
    if isinstance(error, sa.DataError):
        return "the database rejected a value"
    if isinstance(error, sa.OperationalError | sa.InterfaceError | sa.DisconnectionError):
        return _operational(str(original or "").lower(), sqlite="sqlite" in type(
            original).__module__)
    if isinstance(error, sa.ProgrammingError):
        return "the database rejected a statement (is the schema up to date?)"
    return "the database failed"


def _operational(text: str, *, sqlite: bool) -> str:
    if "locked" in text or "busy" in text:  # SQLite: another writer holds the file
        return "the database is busy with another writer; try again"
    if sqlite and not any(word in text for word in ("unable to open", "disk", "readonly")):
        return "the database could not run a statement"  # the file is there and answering
    return "the database is unreachable or the connection was lost"
