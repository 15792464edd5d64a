"""The server's log: one record a line, JSON when stderr is not a terminal.

``truemem serve`` hands ``log_config()`` to uvicorn, which applies it in every worker
process: uvicorn's own loggers, TrueMem's (``truemem.*``) and any library's (the MCP
SDK's, which would otherwise install a wrapping rich handler) all write through one
handler on stderr. A JSON line is ``{"time", "level", "logger", "message"}``, plus
``exception`` (the traceback, as one string) and, for an access record, ``client``,
``method``, ``path``, ``status``. On a terminal the same record is one plain line
(a traceback follows it).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


class OneLine(logging.Formatter):
    """A record as one JSON object (``as_json``; default: when stderr is not a terminal)
    or one plain line."""

    def __init__(self, as_json: bool | None = None) -> None:
        super().__init__()
        self.as_json = not sys.stderr.isatty() if as_json is None else as_json

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        message = record.getMessage()
        trace = self.formatException(record.exc_info) if record.exc_info else None
        if not self.as_json:
            line = f"{when} {record.levelname} {record.name}: {message!s}".replace("\n", "\\n")
            return f"{line}\n{trace}" if trace else line
        fields: dict[str, Any] = {"time": when, "level": record.levelname,
                                  "logger": record.name, "message": message}
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) \
                and len(record.args) == len(_ACCESS_FIELDS):
            fields.update(zip(_ACCESS_FIELDS, record.args, strict=True))
        if trace:
            fields["exception"] = trace
        return json.dumps(fields, ensure_ascii=False, default=str)


def log_config(level: str = "INFO") -> dict[str, Any]:
    """uvicorn's ``log_config``: every logger through one ``OneLine`` handler on stderr;
    uvicorn's and TrueMem's at ``level``, other libraries' from WARNING."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"one_line": {"()": OneLine}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "one_line",
                                "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": {
            name: {"handlers": [], "level": level, "propagate": True}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "truemem")},
    }
