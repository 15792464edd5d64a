"""A session's synthesis written by the LLM, through the strict JSON path of extraction.

The model reads the session's user messages, numbered, and answers
``{"points": [{"text": "...", "sources": [1, 3]}]}``: each point a short statement
of what the user said or did, with the numbers of the messages it comes from. A
point that names no message it was shown is dropped, so the synthesis's sources
are the messages its points cite. An answer that is not that JSON is retried once
with a correction; then the extractive synthesis is used instead (``None``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from truemem_core.language.lenient_json import loads_lenient, strip_fences
from truemem_core.language.llm import LLM, ChatMessage
from truemem_core.synthesis.extractive import MOST_CHARS, READ_CHARS, Drawn, Said, drawn

log = logging.getLogger("truemem.synthesis")

_LOGGED_CHARS = 2_000
_POINT_CHARS = 300

PROMPT = """\
You summarise one past conversation between a USER and an AI assistant, for the assistant \
to remember it later. You are shown the user's messages, numbered, with the day each was said.

Return ONLY a JSON object, with no prose and no code fences:
{"points": [{"text": "...", "sources": [1, 2]}]}

Rules:
- At most 8 points, in the order things happened; each one short sentence in the user's \
language about what the user said, asked, decided or did ("Started a budget app in Flask", \
"Switched the database to PostgreSQL after slow queries").
- "sources" lists the numbers of the messages the point comes from; never a number you \
were not shown.
- Only what the messages say; no advice, no guesses."""

_CORRECTION = (
    "Your previous answer was not valid JSON. Answer again with ONLY the JSON object "
    '{"points": [...]} described above, and no other text.'
)


def build_messages(messages: Sequence[Said]) -> list[ChatMessage]:
    numbered = "\n".join(f"[{n}] ({said.said_at:%Y-%m-%d}) {said.content[:READ_CHARS]}"
                         for n, said in enumerate(messages, start=1))
    return [{"role": "system", "content": PROMPT},
            {"role": "user", "content": f"<messages>\n{numbered}\n</messages>"}]


def parse(raw: str, messages: Sequence[Said]) -> Drawn | None:
    """The synthesis the answer describes; None when it holds no usable point."""
    try:
        value, _ = loads_lenient(strip_fences(raw))
    except ValueError:
        return None
    points = value.get("points") if isinstance(value, dict) else value
    if not isinstance(points, list):
        return None
    kept: list[tuple[Said, str]] = []
    size = 0
    for point in points:
        text, sources = _point(point, len(messages))
        if not text or not sources or size + len(text) + 1 > MOST_CHARS:
            continue
        size += len(text) + 1
        # a point is placed at its first source; its other sources are cited with it
        kept.append((messages[sources[0] - 1], text))
        kept.extend((messages[n - 1], "") for n in sources[1:])
    if not any(text for _, text in kept):
        return None
    found = drawn([(said, text) for said, text in kept])
    return found._replace(text=" ".join(found.text.split()),
                          message_ids=sorted(set(found.message_ids)))


def _point(point: Any, shown: int) -> tuple[str, list[int]]:
    if not isinstance(point, dict) or not isinstance(point.get("text"), str):
        return "", []
    text = " ".join(point["text"].split())
    if len(text) > _POINT_CHARS:
        return "", []
    raw = point.get("sources")
    sources = sorted({n for n in raw if isinstance(n, int) and not isinstance(n, bool)
                      and 1 <= n <= shown}) if isinstance(raw, list) else []
    if text and not text.endswith((".", "!", "?")):
        text += "."
    return text, sources


async def synthesize_with_llm(llm: LLM, messages: Sequence[Said]) -> Drawn | None:
    """The LLM's synthesis of ``messages``; None when it answers garbage twice."""
    prompt = build_messages(messages)
    raw = await llm.acomplete(prompt)
    if (found := parse(raw, messages)) is not None:
        return found
    log.warning("malformed synthesis answer, retrying once: %r", raw[:_LOGGED_CHARS])
    retry: list[ChatMessage] = [*prompt]
    if raw.strip():  # some providers reject an empty assistant turn
        retry.append({"role": "assistant", "content": raw})
    retry.append({"role": "user", "content": _CORRECTION})
    raw = await llm.acomplete(retry)
    if (found := parse(raw, messages)) is None:
        log.error("malformed synthesis answer after a retry: %r", raw[:_LOGGED_CHARS])
    return found
