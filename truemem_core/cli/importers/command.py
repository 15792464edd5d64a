"""``truemem import --from mem0|langmem FILE``: another system's memories into TrueMem.

The file is read and every record checked before anything is written; ``--dry-run``
reports what an import would do. A progress bar shows on stderr while memories are
embedded and written; the summary goes to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from truemem_core import ImportReport, InvalidInputError, TrueMem
from truemem_core.cli.importers.formats import FORMATS, parse

Bar = Callable[[str], contextlib.AbstractContextManager[Callable[[int, int], None]]]


def add_parser(commands: Any) -> None:
    sub = commands.add_parser(
        "import", help="bring memories over from mem0 or LangMem (a LangGraph store)",
        description="Import another memory system's export: each memory keeps its text, "
        "user and times, is re-embedded, deduplicated and scored by admission control. "
        "Importing the same file again adds nothing.")
    sub.add_argument("--from", dest="source", required=True, choices=FORMATS,
                     help="mem0: get_all() JSON or rows of its pgvector collection; "
                     "langmem: a LangGraph store's items")
    sub.add_argument("file", help="a JSON array, JSON Lines, or CSV with a header line")
    sub.add_argument("--user", help="import every record for this user id (default: each "
                     "record's own: mem0's user_id, the namespace's user label)")
    sub.add_argument("--user-at", type=int, default=1, metavar="N",
                     help="langmem: the namespace label that is the user id (default 1, "
                     "as in ('memories', user_id))")
    sub.add_argument("--batch-size", type=int, default=256, metavar="N",
                     help="records written per transaction (default 256): a run that is "
                     "stopped keeps its whole batches, and the same command carries on")
    sub.add_argument("--dry-run", action="store_true",
                     help="read and check the file, report what would be imported, write "
                     "nothing")


def read(file: str) -> str:
    """A UTF-8 text file, without the byte order mark some editors put first."""
    try:
        return Path(file).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{file} is not UTF-8 text ({exc.reason})") from exc


def summary(report: ImportReport, *, dry_run: bool) -> str:
    users = ", ".join(f"{user} ({n})" for user, n in report.users.items() if n) or "none"
    if dry_run:
        return (f"dry run: {report.read} records read, {sum(report.users.values())} would be "
                f"imported, {report.skipped} already imported; users: {users}")
    return (f"{report.read} records read: {report.added} new memories, {report.merged} merged "
            f"into existing ones, {report.rejected} rejected by admission control, "
            f"{report.skipped} already imported; users: {users}")


def run(args: argparse.Namespace, memory: TrueMem, bar: Bar) -> None:
    if args.user_at < 0:
        raise InvalidInputError(f"--user-at must be >= 0, got {args.user_at}")
    records = parse(args.source, read(args.file), args.file, user=args.user,
                    user_at=args.user_at)
    with bar("importing") as update:
        report = memory.items.import_records(records, dry_run=args.dry_run, progress=update,
                                             batch_size=args.batch_size)
    print(summary(report, dry_run=args.dry_run))
