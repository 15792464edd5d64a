"""The ``truemem`` command: its parser, one module per group of commands (the demo,
memories, users, the graph, importing, maintenance, workers), and what runs one.

A user mistake never shows a traceback: it ends as one line on stderr,
``truemem: error: …``, and exit status 2. Commands that only read or change
existing data refuse a SQLite path where there is no store instead of creating one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from truemem_core import TrueMem, TrueMemError, require_store, store_exists
from truemem_core.cli import demo, graph, maintenance, memories, users, worker
from truemem_core.cli.importers import command as import_command
from truemem_core.cli.progress import bar

# The only commands that may create a store; every other one needs an existing one.
CREATES_STORE = {("memories", "add"), ("memories", "import"), ("user", "import"),
                 ("import", None)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="truemem",
        description="TrueMem's command line: the demo, memories and users, re-embedding, "
        "maintenance, background workers.",
        epilog="A mistake prints one 'truemem: error: ...' line and exits with status 2. "
        "Only 'memories add', 'memories import', 'user import' and 'import' create a missing "
        "store.")
    parser.add_argument(
        "--database", metavar="URL",
        help="SQLite path or database URL "
        "(default: $TRUEMEM_DATABASE_URL, else ~/.truemem/truemem.db)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo.add_parser(commands)
    worker.add_parser(commands)
    memories.add_parser(commands)
    users.add_parser(commands)
    graph.add_parser(commands)
    import_command.add_parser(commands)
    maintenance.add_parsers(commands)
    _add_plugins(commands)
    return parser


def _add_plugins(commands: Any) -> None:
    """Commands of other packages, each a 'truemem.cli' entry point ``register(commands)``
    that sets ``run`` (args -> exit code) on its parsers: serve, keys, mcp (truemem_server)."""
    for entry in sorted(entry_points(group="truemem.cli"), key=lambda e: e.name):
        entry.load()(commands)


HANDLERS: dict[str, Callable[[argparse.Namespace, TrueMem], None]] = {
    "memories": memories.run,
    "user": users.run,
    "graph": graph.run,
    "import": lambda args, memory: import_command.run(args, memory, bar),
    "reembed": maintenance.reembed,
    "maintain": maintenance.maintain,
}


def _run(args: argparse.Namespace) -> int:
    if hasattr(args, "run"):  # a plugin's command
        return int(args.run(args))
    if args.command == "demo":
        return demo.run(args)
    if args.command == "worker":
        return worker.run(args)
    if (args.command, getattr(args, "action", None)) not in CREATES_STORE:
        require_store(args.database)
    with contextlib.ExitStack() as stack:
        database = args.database
        if getattr(args, "dry_run", False) and not store_exists(database):
            # nothing there yet, so nothing already imported: checked against an empty
            # store of its own, the path is left as it was
            database = str(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "dry.db")
        # one command, one caller: nothing to gain from loading models before they are needed
        with TrueMem(database, preload=False) as memory:
            HANDLERS[args.command](args, memory)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit outside this handler
        return code
    except TrueMemError as exc:
        print(f"truemem: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("truemem: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader left (`truemem memories list --user a | head`): quietly, and with
        # stdout on /dev/null so that flushing it at exit raises nothing either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
