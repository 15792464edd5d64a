"""``truemem memories list|show|add|import|edit|delete|search --user U``: one user's
memories, read and changed one at a time (or imported from a file of facts)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, get_args

from truemem_core import InvalidInputError, Kind, Memory, TrueMem
from truemem_core.cli.importers import command as import_command
from truemem_core.cli.importers import formats as import_formats
from truemem_core.cli.progress import bar


def _print_memory(memory: Memory) -> None:
    print(
        f"{memory.id}  [{memory.importance}] {memory.kind:<8} {memory.source:<9} "
        f"{memory.state:<8} {memory.text}"
    )


def run(args: argparse.Namespace, memory: TrueMem) -> None:
    if args.action == "list":
        items = memory.list_memories(args.user, include_archived=args.all)
        if args.json:
            print(json.dumps([m.to_dict() for m in items], indent=2))
            return
        for item in items:
            _print_memory(item)
        print(f"{len(items)} memories for user {args.user!r}", file=sys.stderr)
    elif args.action == "show":
        _print_memory(memory.get_memory(args.user, args.memory_id))
        for event in memory.history(args.user, args.memory_id):
            change = f"{event.old_text!r} -> {event.new_text!r}" if event.new_text else ""
            print(f"  {event.created_at:%Y-%m-%d %H:%M:%S} {event.action:<8} {change}")
    elif args.action == "add":
        _print_memory(memory.add_memory(args.user, args.text, importance=args.importance))
    elif args.action == "import":
        _import(args, memory)
    elif args.action == "edit":
        if args.text is None and args.importance is None:
            raise InvalidInputError("nothing to change: give --text and/or --importance")
        _print_memory(
            memory.update_memory(args.user, args.memory_id, text=args.text,
                                 importance=args.importance)
        )
    elif args.action == "delete":
        memory.delete_memory(args.user, args.memory_id)
        print(f"deleted {args.memory_id}")
    elif args.action == "search":
        for hit in memory.search(args.user, args.query, k=args.k):
            print(f"{hit.score:6.3f}  ", end="")
            _print_memory(hit.memory)


def _read_facts(file: str) -> tuple[list[Any], list[str]]:
    """The facts of a JSON array or JSON Lines file, and where each one is (for errors)."""
    text = import_command.read(file)
    if text.lstrip().startswith("["):
        try:
            facts = import_formats.load_json(text)
        except ValueError as exc:
            raise InvalidInputError(f"{file} is not a JSON array ({exc})") from exc
        return facts, [f"{file} item {n}" for n in range(len(facts))]
    lines = import_formats.json_lines(text, file)
    return [fact for _, fact in lines], [f"{file} line {n}" for n, _ in lines]


def _import(args: argparse.Namespace, memory: TrueMem) -> None:
    facts, where = _read_facts(args.file)
    try:
        with bar("importing") as update:
            added = memory.add_memories(args.user, facts, importance=args.importance,
                                        kind=args.kind, progress=update)
    except InvalidInputError as exc:  # "item N: why" -> where item N is in the file
        item, _, why = str(exc).partition(": ")
        if not item.startswith("item ") or not item[5:].isdigit():
            raise
        raise InvalidInputError(f"{where[int(item[5:])]}: {why}") from exc
    print(f"imported {len(added)} facts for user {args.user!r} "
          f"into {len({m.id for m in added})} memories")


def add_parser(commands: Any) -> None:
    mem = commands.add_parser(
        "memories", help="list, show, add, import, edit, delete, search memories")
    mem_actions = mem.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in [("list", "a user's memories"), ("show", "one memory and its history"),
                       ("add", "store a fact"),
                       ("import", "add the facts of a JSON Lines file or JSON array"),
                       ("edit", "change a memory"),
                       ("delete", "delete a memory and its text"),
                       ("search", "the memories closest to a query")]:
        sub = mem_actions.add_parser(name, help=text)
        sub.add_argument("--user", required=True, help="the user's id")
        if name in ("show", "edit", "delete"):
            sub.add_argument("memory_id")
        if name == "list":
            sub.add_argument("--all", action="store_true", help="include archived memories")
            sub.add_argument("--json", action="store_true", help="print JSON")
        if name == "add":
            sub.add_argument("text")
        if name == "import":
            sub.add_argument("file", help='one fact a line: "text" or {"text": ..., '
                             '"importance": ..., "kind": ...}; or a JSON array of them')
            sub.add_argument("--kind", choices=get_args(Kind),
                             help="the kind of facts without one (default: classified)")
        if name in ("add", "import", "edit"):
            sub.add_argument("--importance", type=int, choices=range(1, 6))
        if name == "edit":
            sub.add_argument("--text")
        if name == "search":
            sub.add_argument("query")
            sub.add_argument("-k", type=int, default=None)
