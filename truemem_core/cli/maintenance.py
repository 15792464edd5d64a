"""``truemem reembed`` (every vector again, after a model change) and ``truemem maintain
--user U`` (scores, lifecycle states and pruning now rather than on schedule)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from truemem_core import TrueMem
from truemem_core.cli.progress import bar


def reembed(args: argparse.Namespace, memory: TrueMem) -> None:
    with bar("re-embedding") as update:
        count = memory.admin.reembed(progress=update)
    print(f"re-embedded {count} vectors (memories and past messages)")


def maintain(args: argparse.Namespace, memory: TrueMem) -> None:
    for user in args.user:
        changes = memory.admin.maintain(user)
        for memory_id, state in sorted(changes.items()):
            print(f"{memory_id}  {state:<9}  {user}")
        noun = "memory" if len(changes) == 1 else "memories"
        print(f"{len(changes)} {noun} of user {user!r} changed state", file=sys.stderr)


def add_parsers(commands: Any) -> None:
    commands.add_parser(
        "reembed", help="recompute every vector with the default embedder (after a model change)")
    maintain = commands.add_parser(
        "maintain", help="recompute scores and lifecycle states now, then prune")
    maintain.add_argument("--user", required=True, action="append",
                          help="the user's id (repeat for several users)")
