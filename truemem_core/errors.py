"""TrueMem's exceptions: one root, a short hierarchy, driver errors translated.

    TrueMemError
    ├── InvalidInputError (also a ValueError)   bad argument: nothing was written
    ├── NotFoundError (also a KeyError)          unknown id, or another user's id
    ├── EmbedderMismatchError                    store made with another embedding model
    ├── MissingDependencyError (ImportError)     optional extra not installed
    ├── StorageError                             the database failed (wraps the driver error)
    ├── BrokerError                              the job broker failed (wraps the client error)
    ├── DrainTimeoutError (also a TimeoutError)  background jobs still pending at the deadline
    └── ClosedError (also a RuntimeError)        the TrueMem was closed
"""

from __future__ import annotations


class TrueMemError(Exception):
    """Root of every error TrueMem raises."""


class InvalidInputError(TrueMemError, ValueError):
    """An argument was rejected before anything was written."""


class NotFoundError(TrueMemError, KeyError):
    """No such record for this user (another user's id looks exactly the same)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "not found"


class EmbedderMismatchError(TrueMemError):
    """The store's vectors were made by a different embedding model or dimension."""


class MissingDependencyError(TrueMemError, ImportError):
    """An optional dependency is needed; the message says which extra to install."""


class StorageError(TrueMemError):
    """The database failed; the driver's exception is chained as ``__cause__``."""


class BrokerError(TrueMemError):
    """The job broker failed; the client's exception is chained as ``__cause__``."""


class DrainTimeoutError(TrueMemError, TimeoutError):
    """``drain()`` ran out of time with background jobs still pending."""


class ClosedError(TrueMemError, RuntimeError):
    """A closed ``TrueMem`` was used again (it never reopens by itself)."""


def require(module: str, extra: str) -> None:
    """Raise a helpful error when an optional dependency is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingDependencyError(
            f"{module!r} is not installed; install it with: pip install 'truemem[{extra}]'"
        )
