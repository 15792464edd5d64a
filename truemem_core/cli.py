"""The ``truemem`` command: the demo, memory inspection and editing, workers."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from truemem_core._client import TrueMem
from truemem_core.errors import TrueMemError
from truemem_core.records import Memory


def _print_memory(memory: Memory) -> None:
    print(
        f"{memory.id}  [{memory.importance}] {memory.kind:<8} {memory.source:<9} "
        f"{memory.state:<8} {memory.text}"
    )


def _memories(args: argparse.Namespace, memory: TrueMem) -> None:
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
    elif args.action == "edit":
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


def _user(args: argparse.Namespace, memory: TrueMem) -> None:
    if args.action == "export":
        text = json.dumps(memory.export_user(args.user), indent=2, ensure_ascii=False)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(text)
        else:
            print(text)
    elif args.action == "import":
        with open(args.file, encoding="utf-8") as source:
            restored = memory.import_user(args.user, json.load(source))
        print(f"imported {len(restored)} memories for user {args.user!r}")
    elif args.action == "erase":
        if not args.yes:
            raise SystemExit(f"refusing to erase {args.user!r} without --yes")
        print(f"erased user {args.user!r} ({memory.erase_user(args.user)} memories)")


def _demo(args: argparse.Namespace) -> int:
    from truemem_core._demo import run_demo

    return 0 if run_demo(args.database) else 1


def _load_object(path: str) -> Any:
    """``package.module:attribute`` → the attribute (called if it is a factory)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"--llm takes module:attribute (e.g. myapp.llms:build), got {path!r}")
    target = getattr(importlib.import_module(module_name), attribute)
    return target() if callable(target) and not hasattr(target, "acomplete") else target


def _worker(args: argparse.Namespace) -> int:
    redis_url = args.redis_url or os.environ.get("TRUEMEM_REDIS_URL")
    if not redis_url:
        raise SystemExit(
            "truemem worker needs a Redis broker: pass --redis-url or set TRUEMEM_REDIS_URL "
            "(without Redis, TrueMem runs its background jobs in-process and needs no worker)"
        )
    if args.processes > 1:
        return _worker_pool(args)
    llm = _load_object(args.llm) if args.llm else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    memory = TrueMem(args.database, redis_url=redis_url, llm=llm)
    print(f"truemem worker: {args.threads} threads on {redis_url} (Ctrl-C to stop)",
          file=sys.stderr, flush=True)
    try:
        memory.serve_jobs(threads=args.threads)
    except KeyboardInterrupt:
        pass
    finally:
        memory.close()
    return 0


def _worker_pool(args: argparse.Namespace) -> int:
    """Run ``--processes`` single-process workers and stop them together."""
    argv = [sys.executable, "-m", "truemem_core.cli"]
    if args.database:
        argv += ["--database", args.database]
    argv += ["worker", "--processes", "1", "--threads", str(args.threads)]
    for flag, value in (("--redis-url", args.redis_url), ("--llm", args.llm)):
        if value:
            argv += [flag, value]
    children = [subprocess.Popen(argv) for _ in range(args.processes)]
    try:
        return max(child.wait() for child in children)
    except KeyboardInterrupt:
        return 0
    finally:
        for child in children:
            child.terminate()
        for child in children:
            child.wait()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="truemem", description=__doc__)
    parser.add_argument(
        "--database", metavar="URL",
        help="SQLite path or database URL "
        "(default: $TRUEMEM_DATABASE_URL, else ~/.truemem/truemem.db)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("demo", help="two scripted sessions, days apart, on a fresh store")

    worker = commands.add_parser("worker", help="run background jobs from Redis")
    worker.add_argument("--redis-url", help="default: $TRUEMEM_REDIS_URL")
    worker.add_argument("--processes", type=int, default=1, help="worker processes (default 1)")
    worker.add_argument("--threads", type=int, default=2, help="threads per process (default 2)")
    worker.add_argument("--llm", metavar="MODULE:ATTR",
                        help="an LLM (or a factory returning one) for extraction and summaries")

    mem = commands.add_parser("memories", help="list, show, add, edit, delete, search memories")
    mem_actions = mem.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in [("list", "a user's memories"), ("show", "one memory and its history"),
                       ("add", "store a fact"), ("edit", "change a memory"),
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
        if name in ("add", "edit"):
            sub.add_argument("--importance", type=int, choices=range(1, 6))
        if name == "edit":
            sub.add_argument("--text")
        if name == "search":
            sub.add_argument("query")
            sub.add_argument("-k", type=int, default=None)

    user = commands.add_parser("user", help="export, import or erase all of a user's data")
    user_actions = user.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = user_actions.add_parser("export", help="print (or write) the user's data as JSON")
    export.add_argument("--output", "-o")
    imp = user_actions.add_parser("import", help="restore an export under a user id")
    imp.add_argument("file")
    erase = user_actions.add_parser("erase", help="delete every row of the user")
    erase.add_argument("--yes", action="store_true", help="confirm")
    for sub in (export, imp, erase):
        sub.add_argument("--user", required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers: dict[str, Callable[[argparse.Namespace, TrueMem], Any]] = {
        "memories": _memories,
        "user": _user,
    }
    try:
        if args.command == "demo":
            return _demo(args)
        if args.command == "worker":
            return _worker(args)
        with TrueMem(args.database) as memory:
            handlers[args.command](args, memory)
    except TrueMemError as exc:
        print(f"truemem: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
