"""``truemem demo``: one user, two sessions days apart, two different models.

Everything runs offline on the embedded default (SQLite, in-process jobs, the
built-in embedder and rule-based extractor). The "models" are scripted, which
is the point: the memory lives outside them, so the second one knows the user.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from truemem_core import Context, TrueMem

USER = "prathamesh"
FIRST_SESSION = [
    ("Hi! I'm Prathamesh, a senior software engineer at TrueFoundry.",
     "Nice to meet you, Prathamesh! How can I help?"),
    ("I'm working on a memory service for our AI gateway.",
     "That sounds like a great project. What is it for?"),
    ("Remember that I prefer bullet points.", "Got it: bullet points from now on."),
    ("By the way, I'm allergic to peanuts, so no peanut snacks at team events.",
     "Noted, I'll keep that in mind."),
]
QUESTION = "Draft my weekly update, and suggest a snack for Friday's team meeting."
EXPECTED = {
    "name": "Prathamesh",
    "role": "engineer",
    "preference": "bullet points",
    "allergy": "peanuts",
}


def scripted_model(name: str) -> Callable[[Context], str]:
    """A stand-in LLM that answers from the context it is given."""

    def answer(context: Context) -> str:
        facts = "; ".join(m.text for m in context.facts) or "nothing yet"
        return f"[{name}] Using what I know about you ({facts}): here is your update…"

    return answer


def _print_context(context: Context, out: Callable[[str], None]) -> None:
    out("  system prompt sent to the model:")
    for line in context.to_system_prompt().splitlines():
        out(f"    | {line}")
    out(f"  {len(context.recent_messages)} recent messages, {context.tokens} tokens")
    steps = ("embed", "search", "load_session", "explicit", "total")
    out("  timings (ms): " + ", ".join(
        f"{step} {context.timings[step]:.1f}" for step in steps if step in context.timings))


def run_demo(database: str | None = None, out: Callable[[str], None] = print) -> bool:
    """Run the demo; True when the second model's context holds every expected fact."""
    workdir = None if database else tempfile.TemporaryDirectory(prefix="truemem-demo-")
    url = database or str(Path(workdir.name if workdir else ".") / "demo.db")
    started = time.perf_counter()
    try:
        # its background jobs run here: a TRUEMEM_REDIS_URL set for production is no
        # worker of this throw-away store
        with TrueMem(url, redis_url="") as memory:
            out(f"TrueMem demo — store: {memory.admin.database_url}\n")
            out("Session 1 · model: gpt-4o (scripted)")
            for said, reply in FIRST_SESSION:  # gpt-4o's scripted replies
                context = memory.get_context(USER, "monday", said)
                memory.record(USER, "monday", said, reply)
                out(f"  user> {said}")
                for item in context.explicit:
                    out(f"        (explicit memory stored: {item.text!r}, importance 5)")
            memory.drain(timeout=60)

            out("\n… three days later …\n")
            out("Session 2 · model: claude-sonnet (scripted) — a different model")
            context = memory.get_context(USER, "thursday", QUESTION)
            out(f"  user> {QUESTION}")
            _print_context(context, out)
            reply = scripted_model("claude-sonnet")(context)
            out(f"  assistant> {reply}")
            memory.record(USER, "thursday", QUESTION, reply)
            memory.drain(timeout=60)

            out("\nStored memories (importance, source, text):")
            for item in memory.list_memories(USER):
                out(f"  [{item.importance}] {item.source:<9} {item.text}")
            prompt = context.to_system_prompt().lower()
            found = {what: word.lower() in prompt for what, word in EXPECTED.items()}
            out("\nThe second model's context already knows the user's "
                + ", ".join(f"{what} {'✓' if ok else '✗'}" for what, ok in found.items()))
            out(f"Done in {time.perf_counter() - started:.1f}s.")
            return all(found.values())
    finally:
        if workdir is not None:
            workdir.cleanup()


def add_parser(commands: Any) -> None:
    commands.add_parser("demo", help="two scripted sessions, days apart, on a fresh store")


def run(args: argparse.Namespace) -> int:
    return 0 if run_demo(args.database) else 1


def main() -> int:
    return 0 if run_demo() else 1


if __name__ == "__main__":
    sys.exit(main())
