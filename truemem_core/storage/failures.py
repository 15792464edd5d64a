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
_UNREACHABLE = "the database is unreachable or the connection was lost"
# What an operator must fix, said by the code or, where a connection never opened and
# libpq gave no code, by the server's words (matched, never shown: they name roles).
_SETUP_CODES = {
    "28P01": "the database refused the user name or password of the URL",
    "28000": "the database refused the user name or password of the URL",
    "3D000": "the database the URL names does not exist",
    "42501": "the database role lacks a privilege this needs (a missing extension: have a "
             "superuser run CREATE EXTENSION vector once, see docs/operations.md)",
    # said in words only (no code of their own that other failures do not share)
    "login": "the database refused this user (a role that may not log in, or a "
             "pg_hba.conf rule that rejects it)",
    "connect": "the database role may not connect to the database the URL names (it "
               "needs the CONNECT privilege)",
    "closed": "the database the URL names accepts no connections now",
}
_SETUP_WORDS = (  # (the words a refusal's text holds, all of them; its code)
    (("password authentication failed",), "28P01"),
    (("role", "does not exist"), "28000"),
    (("database", "does not exist"), "3D000"),
    (("not permitted to log in",), "login"),
    (("pg_hba.conf",), "login"),
    (("permission denied for database",), "connect"),
    (("not currently accepting connections",), "closed"),
)


def storage_error(error: BaseException) -> StorageError:
    """A ``StorageError`` that says in words what failed (chain the original yourself)."""
    return StorageError(f"database error: {_describe(error)}")


def is_outage(error: StorageError) -> bool:
    """Whether ``error`` says the database could not be reached (worth waiting out)."""
    return str(error).endswith(_UNREACHABLE)


def _describe(error: BaseException) -> str:
    original = getattr(error, "orig", None)
    code = getattr(original, "sqlstate", None) or getattr(
        getattr(original, "diag", None), "sqlstate", None)
    if not isinstance(code, str):
        code = _setup_code(str(original or ""))
    if isinstance(code, str):
        if code in _CONFLICT_CODES:
            return _CONFLICT_CODES[code]
        if code in _SETUP_CODES:
            return _SETUP_CODES[code]
        if code.startswith(_UNAVAILABLE_CLASSES):
            return _UNREACHABLE
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


def _setup_code(text: str) -> str | None:
    """The SQLSTATE of a refused connection that libpq reported without one."""
    text = text.lower()
    if "fatal:" not in text:
        return None
    for words, code in _SETUP_WORDS:
        if all(word in text for word in words):
            return code
    return None


def _operational(text: str, *, sqlite: bool) -> str:
    if "locked" in text or "busy" in text:  # SQLite: another writer holds the file
        return "the database is busy with another writer; try again"
    if sqlite and "unable to open" in text:
        return ("the database file cannot be opened (is the path a file, in a folder that "
                "exists, that this process may write?)")
    if sqlite and not any(word in text for word in ("disk", "readonly")):
        return "the database could not run a statement"  # the file is there and answering
    return _UNREACHABLE
