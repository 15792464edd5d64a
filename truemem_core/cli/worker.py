"""``truemem worker``: its flags, every one checked before anything starts; then the
supervisor (``supervisor.run``) serves jobs until a signal stops it."""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

from truemem_core import InvalidInputError, resolve_url
from truemem_core.cli import supervisor
from truemem_core.cli.supervisor import DEFAULT_GIVE_UP_S, GIVE_UP_ENV


def _give_up_after(flag: str | None) -> float:
    source, value = "--give-up-after", flag
    if value is None:
        source, value = f"${GIVE_UP_ENV}", os.environ.get(GIVE_UP_ENV)
        if not value:
            return DEFAULT_GIVE_UP_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds >= 0:  # also rejects nan
        raise InvalidInputError(
            f"{source} must be a number of seconds >= 0 (or inf), got {value!r}")
    return seconds


def _worker_config(args: argparse.Namespace) -> supervisor.WorkerConfig:
    """Every flag checked before anything starts (no connection, no process, no store)."""
    redis_url = args.redis_url or os.environ.get("TRUEMEM_REDIS_URL")
    if not redis_url:
        raise InvalidInputError(
            "truemem worker needs a Redis broker: pass --redis-url or set TRUEMEM_REDIS_URL "
            "(without Redis, TrueMem runs its background jobs in-process and needs no worker)")
    for flag, value in (("--processes", args.processes), ("--threads", args.threads)):
        if value < 1:
            raise InvalidInputError(f"{flag} must be at least 1, got {value}")
    give_up_after = _give_up_after(args.give_up_after)
    resolve_url(args.database)
    supervisor.redis_client(redis_url).close()
    if args.llm:
        supervisor.resolve_llm(args.llm)
    return supervisor.WorkerConfig(args.database, redis_url, args.processes, args.threads,
                                   give_up_after, args.llm, args.pool_parent)


def add_parser(commands: Any) -> None:
    worker = commands.add_parser("worker", help="run background jobs from Redis")
    worker.add_argument("--redis-url", help="default: $TRUEMEM_REDIS_URL")
    worker.add_argument("--processes", type=int, default=1, help="worker processes (default 1)")
    worker.add_argument("--threads", type=int, default=2, help="threads per process (default 2)")
    worker.add_argument("--llm", metavar="MODULE:ATTR",
                        help="an LLM (or a factory returning one) for extraction and summaries")
    worker.add_argument(
        "--give-up-after", metavar="SECONDS",
        help=f"exit when Redis, or the database at start, stays unreachable this long "
        f"(default: ${GIVE_UP_ENV}, "
        f"else {DEFAULT_GIVE_UP_S:g}; inf never gives up)")
    worker.add_argument("--pool-parent", type=int, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    return supervisor.run(_worker_config(args))
