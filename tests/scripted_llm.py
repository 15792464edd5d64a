"""Scripted stand-ins for an LLM (the one thing a user has nothing real of offline)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path

from truemem_core.language import ChatMessage


class ScriptedLLM:
    """Answers with the queued replies in order (the last one repeats); records prompts."""

    def __init__(self, *replies: str | BaseException) -> None:
        self.replies = list(replies)
        self.prompts: list[list[ChatMessage]] = []

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        self.prompts.append(list(messages))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        return reply


def facts_json(*facts: tuple[str, int, str]) -> str:
    return json.dumps({"facts": [
        {"text": text, "importance": importance, "kind": kind} for text, importance, kind in facts
    ]})


class SlowLLM:
    """For worker-crash tests: touches a marker file, then takes its time to answer."""

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        marker = os.environ.get("TRUEMEM_TEST_MARKER")
        if marker:
            with Path(marker).open("a") as out:
                out.write("called\n")
        await asyncio.sleep(float(os.environ.get("TRUEMEM_TEST_DELAY", "0")))
        return facts_json(("Works as a lighthouse keeper", 4, "semantic"))


def slow() -> SlowLLM:
    return SlowLLM()
