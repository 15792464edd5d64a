"""``truemem serve``, ``truemem keys …`` and ``truemem mcp``: registered on the
``truemem`` command through the ``truemem.cli`` entry point (``register``).

Only argparse is imported here: FastAPI, uvicorn and the app load when a command
runs, so ``truemem --help`` works without the ``server`` extra and a command
that needs it says how to install it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import sys
from typing import Any

from truemem_core import InvalidInputError, MissingDependencyError, check_redis_url, resolve_url
from truemem_server.settings import API_DOCS, ServerSettings


def register(commands: Any) -> None:
    """Add the service's commands to the ``truemem`` parser's sub-commands."""
    serve = commands.add_parser("serve", help="serve the HTTP API (FastAPI on uvicorn)")
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    serve.add_argument("--port", type=int, default=8000, help="default 8000")
    serve.add_argument("--workers", type=int, default=1, help="server processes (default 1)")
    serve.add_argument("--redis-url", help="the job broker (default: $TRUEMEM_REDIS_URL)")
    serve.add_argument("--max-body-bytes", metavar="N", help=(
        "refuse a larger request body with 413 (default: $TRUEMEM_MAX_BODY_BYTES, else 4 MiB)"))
    serve.add_argument("--max-import-bytes", metavar="N", help=(
        "the same for a user import (default: $TRUEMEM_MAX_IMPORT_BYTES, else 64 MiB)"))
    serve.add_argument("--api-docs", choices=API_DOCS, help=(
        "schema: /openapi.json; pages: also /docs and /redoc (scripts from a CDN); off: "
        "none (default: $TRUEMEM_API_DOCS, else schema)"))
    _database_flag(serve)
    serve.set_defaults(run=_serve)

    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    actions = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="make a key and print it (shown once)")
    create.add_argument("--tenant", required=True, help="the namespace of the key's users")
    create.add_argument("--user", help="limit the key to this one user of the tenant")
    create.add_argument("--read-only", action="store_true", help="the key cannot write")
    create.add_argument("--name", help="a note to recognise the key by")
    create.add_argument("--new-store", action="store_true",
                        help="create the SQLite store when the path has none (first setup)")
    listing = actions.add_parser("list", help="the keys (never their secrets)")
    listing.add_argument("--tenant", help="only this tenant's keys")
    listing.add_argument("--json", action="store_true", help="print JSON")
    revoke = actions.add_parser("revoke", help="end a key at once")
    revoke.add_argument("key_id", help="the key's id (or the key itself)")
    for sub in (create, listing, revoke):
        _database_flag(sub)
    keys.set_defaults(run=_keys)

    mcp = commands.add_parser("mcp", help="serve the memory to an MCP client over stdio")
    mcp.add_argument("--user", help="the user whose memory the client sees")
    _database_flag(mcp)
    mcp.set_defaults(run=_mcp)


def _database_flag(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: absent here, the main parser's --database stays in force
    parser.add_argument("--database", metavar="URL", default=argparse.SUPPRESS,
                        help="SQLite path or database URL (as truemem --database)")


def _need_server_extra() -> None:
    for module in ("fastapi", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(
                f"truemem serve needs {module}: pip install 'truemem[server]'")


def _serve(args: argparse.Namespace) -> int:
    _need_server_extra()
    import uvicorn

    from truemem_server.logs import log_config

    if args.workers < 1:
        raise InvalidInputError(f"--workers must be at least 1, got {args.workers}")
    if not 0 <= args.port <= 65535:
        raise InvalidInputError(f"--port must be from 0 to 65535, got {args.port}")
    # the worker processes build their app from the environment (uvicorn's factory):
    # what they would refuse is refused here, as one line, not as their traceback
    os.environ["TRUEMEM_DATABASE_URL"] = resolve_url(args.database)
    redis = args.redis_url or os.environ.get("TRUEMEM_REDIS_URL")
    if redis:
        os.environ["TRUEMEM_REDIS_URL"] = check_redis_url(redis)
    for flag, variable in (("max_body_bytes", "TRUEMEM_MAX_BODY_BYTES"),
                           ("max_import_bytes", "TRUEMEM_MAX_IMPORT_BYTES"),
                           ("api_docs", "TRUEMEM_API_DOCS")):
        if getattr(args, flag) is not None:
            os.environ[variable] = getattr(args, flag)
    ServerSettings.from_env()  # a bad value is refused here, once, not by every worker
    uvicorn.run("truemem_server.app:create_app", factory=True, host=args.host,
                port=args.port, workers=args.workers, log_config=log_config())
    return 0


def _keys(args: argparse.Namespace) -> int:
    from truemem_server.keys import KeyStore

    try:  # a mistyped path, or a file deleted under a running server, is no new store
        store = KeyStore(args.database, create=args.action == "create" and args.new_store)
    except InvalidInputError as exc:
        hint = "; --new-store creates one" if args.action == "create" else ""
        raise InvalidInputError(f"{exc}{hint}") from exc

    async def run() -> None:
        try:
            await _key_action(args, store)
        finally:
            await store.close()

    asyncio.run(run())
    return 0


async def _key_action(args: argparse.Namespace, store: Any) -> None:
    if args.action == "create":
        key, secret = await store.create(args.tenant, user=args.user, read_only=args.read_only,
                                         name=args.name)
        print(secret)
        scope = f"user {key.user!r}" if key.user else "every user"
        mode = "read-only" if key.read_only else "read-write"
        print(f"key {key.id}: tenant {key.tenant!r}, {scope}, {mode}. Store it now: "
              "it is not shown again.", file=sys.stderr)
    elif args.action == "list":
        found = await store.list_keys(args.tenant)
        if args.json:
            print(json.dumps([k.to_dict() for k in found], indent=2))
            return
        for k in found:
            state = f"revoked {k.revoked_at:%Y-%m-%d}" if k.revoked_at else "active"
            print(f"{k.id}  {k.tenant:<16} {k.user or '*':<16} "
                  f"{'read-only' if k.read_only else 'read-write':<10} {state:<18} {k.name or ''}")
        print(f"{len(found)} keys", file=sys.stderr)
    else:
        key = await store.revoke(args.key_id)
        print(f"revoked {key.id} (tenant {key.tenant!r})")


def _mcp(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("truemem_server.mcp_server") is None:
        raise MissingDependencyError(
            "the MCP server is not part of this installation (truemem_server.mcp_server "
            "is missing); upgrade truemem")
    module = importlib.import_module("truemem_server.mcp_server")
    return int(module.main(args) or 0)
