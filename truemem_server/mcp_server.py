"""TrueMem over the Model Context Protocol: the tools an assistant calls to remember
(seven for memories here; the knowledge graph's in ``mcp_graph``).

Two transports, the same tools:

* **stdio** (``truemem mcp --user ana``): one process per assistant, every call acts
  for the one user fixed at start (``--user`` or ``$TRUEMEM_MCP_USER``), on the store
  of ``--database`` or ``$TRUEMEM_DATABASE_URL``.
* **streamable HTTP** (``mount(app)``, at ``/mcp`` of the HTTP API): the key of each
  request decides, with the API's tenant rules. A per-user key acts for its user; a
  tenant key names the user in the ``X-TrueMem-User`` header (or ``?user=``). A
  request without a valid key is refused with 401 before any MCP message is read.

The model never names the user: no tool takes a user id, so nothing the model says
can reach another user's memories. The HTTP transport is stateless (each POST is
served on its own), so the key of the request is the key of every call in it, and
any server process behind a load balancer can answer any request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import replace
from importlib import metadata
from typing import Annotated, Any, Literal

import anyio
from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, InputRequiredResult, Tool, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from truemem_core import (
    InvalidInputError,
    Memory,
    NotFoundError,
    ScoredMemory,
    Settings,
    TrueMem,
    TrueMemError,
    check_user_id,
)
from truemem_server.auth import Principal, key_store, stored_user
from truemem_server.errors import (
    ApiError,
    Unauthorized,
    capped,
    error_response,
    problems,
    status_for,
)
from truemem_server.mcp_caller import Caller, CallerOf
from truemem_server.mcp_graph import graph_tools
from truemem_server.message_ids import MessageIds, of_store
from truemem_server.routes.deps import message_ids_of

INSTRUCTIONS = """\
TrueMem is this user's long-term memory. Before answering a message, call get_context \
with the message and read what it returns. After answering, call record with the \
user's message and your reply, so that lasting facts are remembered. When the user \
asks what you remember, or to remember, correct or forget something, use \
list_memories, search_memories, add_memory, update_memory or delete_memory. The \
knowledge graph (create_entities, create_relations, add_observations, read_graph, \
search_nodes, open_nodes…) holds people, projects and things and how they relate; \
causes, effects and path follow what caused what."""

SESSION_HELP = (
    "A name for this conversation. Use the same one for every call of one conversation; "
    "recent turns and the running summary are kept per session."
)


class MemoryOut(BaseModel):
    id: str
    text: str
    importance: int
    kind: str
    source: str
    state: str
    created_at: str
    updated_at: str


class HitOut(BaseModel):
    memory: MemoryOut
    score: float
    why: str


class RecordedOut(BaseModel):
    user_message_id: int
    assistant_message_id: int | None  # None: the reply had no visible character


class DeletedOut(BaseModel):
    deleted: str


def memory_out(memory: Memory) -> MemoryOut:
    """A memory as a tool returns it: no user id (the connection is one user's)."""
    return MemoryOut(
        id=memory.id, text=memory.text, importance=memory.importance, kind=memory.kind,
        source=memory.source, state=memory.state, created_at=memory.created_at.isoformat(),
        updated_at=memory.updated_at.isoformat(),
    )


def hit_out(hit: ScoredMemory) -> HitOut:
    return HitOut(memory=memory_out(hit.memory), score=hit.score, why=hit.explain())


MAX_ID_SHOWN = 64


def tool_error(error: TrueMemError, memory_id: str | None = None) -> ToolError:
    """A message the model can act on; never a storage id or a driver's text."""
    if isinstance(error, NotFoundError):  # quoted only as long as an id can be
        shown = repr(memory_id) if len(memory_id or "") <= MAX_ID_SHOWN else "with that id"
        return ToolError(f"no memory {shown}: list_memories shows the ids")
    if isinstance(error, InvalidInputError):
        return ToolError(str(error))
    return ToolError(f"TrueMem could not do that ({type(error).__name__}); try again later")


async def _writer(caller_of: CallerOf) -> Caller:
    caller = await caller_of()
    if caller.read_only:
        raise ToolError("this key is read-only: it cannot change memories")
    return caller


READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
EDIT = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                       open_world_hint=False)

Importance = Annotated[int, Field(ge=1, le=5, description=(
    "1 (trivia) to 5 (critical: always in context, e.g. an allergy or a standing instruction)"
))]
MemoryId = Annotated[str, Field(description="The memory's id, as list_memories or "
                                            "search_memories return it")]
Session = Annotated[str, Field(description=SESSION_HELP, max_length=200)]


def _conversation_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=WRITE, description=(
        "Call before answering the user. Returns what TrueMem remembers that bears on "
        "`message`: facts about the user, relevant past turns and the summary of this "
        "conversation, as text to read (not to recite). A 'remember that…' request in "
        "the message is stored on the way."))
    async def get_context(
        message: Annotated[str, Field(description="The user's latest message, verbatim")],
        session_id: Session = "mcp",
    ) -> str:
        caller = await _writer(caller_of)
        try:
            context = await caller.memory.aget_context(caller.user, session_id, message)
        except TrueMemError as error:
            raise tool_error(error) from error
        return context.to_system_prompt()

    @server.tool(annotations=WRITE, description=(
        "Call after answering: stores the user's message and your reply. Lasting facts "
        "in them are extracted and remembered in the background."))
    async def record(
        user_message: Annotated[str, Field(description="What the user said")],
        assistant_message: Annotated[str, Field(description="What you answered")],
        session_id: Session = "mcp",
    ) -> RecordedOut:
        caller = await _writer(caller_of)
        try:
            done = await caller.memory.arecord(
                caller.user, session_id, user_message, assistant_message)
        except TrueMemError as error:
            raise tool_error(error) from error
        ids = caller.message_ids
        return RecordedOut(user_message_id=ids.shown(done.user_message_id),
                           assistant_message_id=ids.optional(done.assistant_message_id))


def _reading_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=READ, description=(
        "Finds the user's memories about `query` by meaning, words and spelling, best "
        "first; each hit says why it was found."))
    async def search_memories(
        query: Annotated[str, Field(description="What to look for, in plain words")],
        k: Annotated[int, Field(ge=1, le=50, description="How many hits at most")] = 5,
    ) -> list[HitOut]:
        caller = await caller_of()
        try:
            hits = await caller.memory.asearch(caller.user, query, k=k)
        except TrueMemError as error:
            raise tool_error(error) from error
        return [hit_out(hit) for hit in hits]

    @server.tool(annotations=READ, description=(
        "Everything remembered about the user, most important first, with each memory's "
        "id (needed to update or delete it)."))
    async def list_memories(
        include_archived: Annotated[bool, Field(
            description="Also the memories archived as stale or superseded")] = False,
    ) -> list[MemoryOut]:
        caller = await caller_of()
        try:
            found = await caller.memory.alist_memories(
                caller.user, include_archived=include_archived)
        except TrueMemError as error:
            raise tool_error(error) from error
        return [memory_out(memory) for memory in found]


def _editing_tools(server: MCPServer, caller_of: CallerOf) -> None:
    @server.tool(annotations=WRITE, description=(
        "Remembers one fact about the user, in a short self-contained sentence "
        "('Is allergic to peanuts'). A near-duplicate is merged into the existing memory."))
    async def add_memory(
        text: Annotated[str, Field(description="The fact, one sentence")],
        importance: Importance | None = None,
        kind: Annotated[Literal["semantic", "episodic"] | None, Field(description=(
            "semantic: a lasting fact or preference; episodic: something that happened"
        ))] = None,
    ) -> MemoryOut:
        caller = await _writer(caller_of)
        try:
            added = await caller.memory.aadd_memory(
                caller.user, text, importance=importance, kind=kind, source="manual")
        except TrueMemError as error:
            raise tool_error(error) from error
        return memory_out(added)

    @server.tool(annotations=EDIT, description=(
        "Corrects a memory's text or changes its importance (give at least one). "
        "The old text stays in the memory's history."))
    async def update_memory(
        memory_id: MemoryId,
        text: Annotated[str | None, Field(description="The corrected fact")] = None,
        importance: Importance | None = None,
    ) -> MemoryOut:
        caller = await _writer(caller_of)
        try:
            changed = await caller.memory.aupdate_memory(
                caller.user, memory_id, text=text, importance=importance)
        except TrueMemError as error:
            raise tool_error(error, memory_id) from error
        return memory_out(changed)

    @server.tool(annotations=EDIT, description=(
        "Forgets a memory for good, its text removed from the history too. Use it when "
        "the user asks to forget something or a memory is wrong."))
    async def delete_memory(memory_id: MemoryId) -> DeletedOut:
        caller = await _writer(caller_of)
        try:
            await caller.memory.adelete_memory(caller.user, memory_id)
        except TrueMemError as error:
            raise tool_error(error, memory_id) from error
        return DeletedOut(deleted=memory_id)


def _version() -> str:
    try:
        return metadata.version("truemem")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "0"


class _Server(MCPServer[Any]):
    """The SDK's server, showing a read-only caller only the tools that read (a call to
    another one is refused all the same)."""

    def __init__(self, caller_of: CallerOf, **options: Any) -> None:
        super().__init__(**options)
        self._caller_of = caller_of

    async def list_tools(self) -> list[Tool]:
        tools = await super().list_tools()
        if not (await self._caller_of()).read_only:
            return tools
        return [t for t in tools if t.annotations is not None and t.annotations.read_only_hint]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None,
                        ) -> CallToolResult | InputRequiredResult:
        """The SDK's call, its error told as the HTTP API tells one: arguments that do
        not fit as ``where: what`` (pydantic's own text quotes the input), and at most
        ``MAX_MESSAGE_CHARS`` characters (a message may quote a long argument)."""
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            told = (f"Error executing tool {name}: {problems(cause.errors())}"
                    if isinstance(cause, ValidationError) else str(exc))
            raise ToolError(capped(told)) from cause


def build_server(caller_of: CallerOf) -> MCPServer:
    """The MCP server with TrueMem's memory tools and its knowledge graph's
    (``mcp_graph``); ``caller_of`` says who each call acts for."""

    caller_of = _with_ids(caller_of)
    server = _Server(caller_of, name="truemem", title="TrueMem", version=_version(),
                     instructions=INSTRUCTIONS, log_level="WARNING")
    _conversation_tools(server, caller_of)
    _reading_tools(server, caller_of)
    _editing_tools(server, caller_of)
    graph_tools(server, caller_of)
    return server


def _with_ids(caller_of: CallerOf) -> CallerOf:
    """``caller_of`` whose callers have their store's message ids (read once a store)."""
    known: dict[str, MessageIds] = {}

    async def complete() -> Caller:
        caller = await caller_of()
        if caller.ids is not None:
            return caller
        url = caller.memory.admin.database_url
        if url not in known:
            known[url] = await of_store(url)
        return replace(caller, ids=known[url])

    return complete


# -- stdio --------------------------------------------------------------------------


def stdio_user(args: argparse.Namespace) -> str:
    """``--user``, else ``$TRUEMEM_MCP_USER``; an error naming both when neither is set,
    and the core's (``check_user_id``) for an id no call would take: said at start."""
    user = getattr(args, "user", None) or os.environ.get("TRUEMEM_MCP_USER", "")
    if not user.strip():
        raise InvalidInputError("no user: pass --user USER or set TRUEMEM_MCP_USER")
    return check_user_id(user, Settings.from_env().max_id_chars)


async def serve_stdio(memory: TrueMem, user: str) -> None:
    caller = Caller(memory, user)

    async def fixed() -> Caller:
        return caller

    try:
        await build_server(fixed).run_stdio_async()
    finally:
        await memory.aclose()


def main(args: argparse.Namespace) -> int:
    """``truemem mcp``: serve the tools over stdin/stdout for one user until stdin closes."""
    try:
        user = stdio_user(args)
    except InvalidInputError as error:
        print(f"truemem mcp: {error}", file=sys.stderr)
        return 2
    memory = TrueMem(getattr(args, "database", None) or None)
    anyio.run(serve_stdio, memory, user)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="truemem mcp", description="TrueMem's MCP server over stdio, for one user")
    parser.add_argument("--user", help="the user every call acts for ($TRUEMEM_MCP_USER)")
    parser.add_argument("--database", help="database URL or path ($TRUEMEM_DATABASE_URL)")
    return parser.parse_args(argv)


# -- streamable HTTP ------------------------------------------------------------------

USER_HEADER = "x-truemem-user"
_caller: ContextVar[Caller | None] = ContextVar("truemem_mcp_caller", default=None)


async def _http_caller() -> Caller:
    caller = _caller.get()
    if caller is None:  # only a request that passed the KeyGate reaches a tool
        raise ToolError("no API key")
    return caller


def _bearer(request: Request) -> str | None:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


async def http_caller(request: Request) -> Caller:
    """The caller of one MCP request: its key's tenant and user (the API's rules).

    Only the ``Authorization`` header counts, never the inspector's cookie: a page
    of another site cannot make a browser call tools on its user's behalf."""
    key = _bearer(request)
    if key is None:
        raise Unauthorized("no API key: send 'Authorization: Bearer tm_…'")
    found = await key_store(request).verify(key)
    if found is None:
        raise Unauthorized("unknown or revoked API key")
    principal = Principal(found.tenant, found.user, found.read_only, found.id)
    user = (request.headers.get(USER_HEADER) or request.query_params.get("user")
            or principal.user)
    if not user:
        raise ApiError(f"a tenant key names the user: send the '{USER_HEADER}' header")
    memory: TrueMem = request.app.state.memory
    return Caller(memory, stored_user(principal, user), principal.read_only,
                  await message_ids_of(request))


class KeyGate:
    """The ASGI app at ``/mcp``: checks the key, then lets the SDK serve the request
    with its caller in a context variable (stateless: each request is served by a task
    started inside it, so its tools see this request's caller and no other)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":  # stateless: no stream to open (GET), none to end
            await error_response(
                405, "MethodNotAllowedError", "send MCP requests with POST",
                {"Allow": "POST"})(scope, receive, send)
            return
        request = Request(scope)
        try:
            caller = await http_caller(request)
        except ApiError as error:
            await error_response(error.status, error.type, error.message, error.headers)(
                scope, receive, send)
            return
        except TrueMemError as error:
            await error_response(status_for(error), type(error).__name__, str(error))(
                scope, receive, send)
            return
        token = _caller.set(caller)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            _caller.reset(token)


def mount(app: FastAPI, path: str = "/mcp") -> None:
    """Serve the tools over streamable HTTP at ``path`` of ``app``, behind its API keys."""
    server = build_server(_http_caller)
    server.streamable_http_app(  # builds the session manager; its own Starlette app is unused
        stateless_http=True, json_response=True,
        # keys, not the Host header, guard this endpoint: it serves any host name
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    manager = server.session_manager
    app.router.routes.append(Route(path, KeyGate(manager), include_in_schema=False))
    app.state.lifespans.append(lambda _app: running(manager))  # entered as the app starts


@asynccontextmanager
async def running(manager: StreamableHTTPSessionManager) -> AsyncIterator[None]:
    """The session manager's task group, held by a task of its own: a lifespan may be
    entered and left by different tasks (a test fixture's are), a task group may not."""
    stop = asyncio.Event()
    up = asyncio.Event()

    async def hold() -> None:
        async with manager.run():
            up.set()
            await stop.wait()

    holder = asyncio.create_task(hold(), name="truemem-mcp-sessions")
    ready = asyncio.create_task(up.wait())
    await asyncio.wait({holder, ready}, return_when=asyncio.FIRST_COMPLETED)
    if holder.done():  # it failed to start: say why
        ready.cancel()
        holder.result()
    try:
        yield
    finally:
        stop.set()
        await holder


if __name__ == "__main__":
    raise SystemExit(main(parse_args()))
