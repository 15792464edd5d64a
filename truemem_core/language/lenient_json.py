"""Read the JSON value an LLM meant to write, whatever it wrapped it in.

Handles code fences, prose before and after, trailing commas and output cut
off mid-way (the complete elements before the cut are kept, the rest dropped).
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_MAX_STARTS = 20  # bracketed prose before the JSON ("[1]", "{name}") is skipped, within reason


def strip_fences(text: str) -> str:
    """The inside of the first fenced block (closing fence optional), else ``text``."""
    match = _FENCE.search(text)
    return match.group(1) if match else text


def loads_lenient(text: str) -> tuple[Any, bool]:
    """``(value, complete)`` for the first JSON object or array in ``text``.

    ``complete`` is False when the value was truncated and closed after its
    last complete element. Raises ``ValueError`` when no JSON value is found.
    """
    text = strip_fences(text)
    starts = [m.start() for m in re.finditer(r"[{\[]", text)][:_MAX_STARTS]
    for start in starts:
        repaired = _repair(text, start)
        if repaired is None:
            continue
        candidate, complete = repaired
        try:
            return json.loads(candidate), complete
        except json.JSONDecodeError:
            continue
    raise ValueError("no JSON object or array found")


def _repair(text: str, start: int) -> tuple[str, bool] | None:
    """Scan one value from ``start``: drop trailing commas, close a truncated tail."""
    out: list[str] = []
    stack: list[str] = []
    safe: tuple[int, list[str]] | None = None  # where a cut leaves only complete elements
    in_string = escaped = False
    for ch in text[start:]:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]":
            if not stack or ch != ("}" if stack[-1] == "{" else "]"):
                break  # malformed from here: keep what was complete
            while out and out[-1] in " \t\r\n,":
                out.pop()  # trailing comma before the closing bracket
            stack.pop()
            out.append(ch)
            if not stack:
                return "".join(out), True
            safe = (len(out), stack.copy())
            continue
        elif ch == "," and stack[-1] == "[":
            safe = (len(out), stack.copy())
        out.append(ch)
    if safe is None:
        return None
    length, still_open = safe
    closing = "".join("}" if c == "{" else "]" for c in reversed(still_open))
    return "".join(out[:length]).rstrip(", \t\r\n") + closing, False
