"""``truemem user export|import|erase|syntheses --user U``: all of a user's data at once."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from truemem_core import InvalidInputError, TrueMem, synthesis_line
from truemem_core.cli.importers import command as import_command
from truemem_core.cli.importers import formats as import_formats


def run(args: argparse.Namespace, memory: TrueMem) -> None:
    if args.action == "export":
        text = json.dumps(memory.export_user(args.user), indent=2, ensure_ascii=False)
        if not args.output:
            print(text)
            return
        try:
            Path(args.output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(
                f"cannot write {args.output}: {exc.strerror or exc}") from exc
    elif args.action == "import":
        restored = memory.import_user(args.user, _read_export(args.file))
        print(f"imported {len(restored)} memories for user {args.user!r}")
    elif args.action == "syntheses":
        found = memory.syntheses.list(args.user)
        if args.json:
            print(json.dumps([item.to_dict() for item in found], indent=2, ensure_ascii=False))
        for item in [] if args.json else found:
            print(f"{item.kind} {item.key} ({len(item.message_ids)} messages) "
                  f"{synthesis_line(item)[2:]}")
    elif args.action == "erase":
        if not args.yes:
            raise InvalidInputError(f"refusing to erase user {args.user!r} without --yes")
        print(f"erased user {args.user!r} ({memory.erase_user(args.user)} memories)")


def _read_export(file: str) -> Any:
    text = import_command.read(file)  # its own error: the file cannot be read
    try:
        return import_formats.load_json(text)
    except ValueError as exc:  # JSONDecodeError, or nested too deeply
        raise InvalidInputError(
            f"{file} is not JSON ({exc}); give a file written by `truemem user export`"
        ) from exc


def add_parser(commands: Any) -> None:
    user = commands.add_parser(
        "user", help="export, import or erase all of a user's data; list its syntheses")
    user_actions = user.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = user_actions.add_parser("export", help="print (or write) the user's data as JSON")
    export.add_argument("--output", "-o")
    imp = user_actions.add_parser("import", help="restore an export under a user id")
    imp.add_argument("file")
    erase = user_actions.add_parser("erase", help="delete every row of the user")
    erase.add_argument("--yes", action="store_true", help="confirm")
    syntheses = user_actions.add_parser(
        "syntheses", help="the user's syntheses: a summary of each stretch of each past session")
    syntheses.add_argument("--json", action="store_true", help="print JSON")
    for sub in (export, imp, erase, syntheses):
        sub.add_argument("--user", required=True)
