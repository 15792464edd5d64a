"""The four memory tools an agent calls, bound to one user, for any framework.

``MemoryTools`` holds each tool's sync and async body (one line each over
``TrueMem``) and its text for the model; ``langchain/tools.py`` and
``llama_index/tools.py`` only wrap them in their framework's tool type. A tool
answers with text written for the model; a bad argument or an unknown id comes back
as ``Error: ...`` for the model to correct, instead of ending the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import ParamSpec

from truemem_core import (
    InvalidInputError,
    Memory,
    NotFoundError,
    ScoredMemory,
    TrueMem,
)

P = ParamSpec("P")

DESCRIPTIONS = {
    "save_memory": (
        "Save a fact about the user to long-term memory, so that it is remembered in later "
        "conversations. Use it when the user shares something lasting about themselves "
        "(preferences, plans, people, constraints, their work) or asks you to remember "
        "something. Write one self-contained fact in the third person, e.g. 'Is allergic "
        "to peanuts'. importance: 1 (minor) to 5 (critical, e.g. allergies or explicit "
        "instructions); leave it out when unsure. A fact already known is merged, not "
        "duplicated."),
    "search_memories": (
        "Search the user's long-term memory for facts relevant to a question or topic. "
        "Use it before answering anything that may depend on what you know about the user. "
        "query: a few words or a question. Returns the best matches, each with its id "
        "(needed to update or delete it) and importance."),
    "update_memory": (
        "Correct or replace a stored fact about the user, by the id that search_memories "
        "showed. Use it when the user says something you remember has changed or is wrong. "
        "text: the whole new fact; importance: optional, 1-5."),
    "delete_memory": (
        "Delete a stored fact about the user for good, by the id that search_memories "
        "showed. Use it when the user asks you to forget something."),
}


def _line(memory: Memory) -> str:
    return f"- [{memory.id}] {memory.text} (importance {memory.importance})"


def saved(memory: Memory) -> str:
    verb = "Saved" if memory.reinforcements == 0 and memory.created_at == memory.updated_at \
        else "Already known; merged into"
    return f"{verb} memory {memory.id}: {memory.text}"


def found(hits: list[ScoredMemory]) -> str:
    if not hits:
        return "No memories found."
    return "\n".join(_line(hit.memory) for hit in hits)


def updated(memory: Memory) -> str:
    return f"Updated memory {memory.id}: {memory.text}"


def _refused(exc: Exception) -> str:
    return f"Error: {exc}"


def _sync(fn: Callable[P, str]) -> Callable[P, str]:
    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return fn(*args, **kwargs)
        except (InvalidInputError, NotFoundError) as exc:
            return _refused(exc)
    return run


def _async(fn: Callable[P, Awaitable[str]]) -> Callable[P, Awaitable[str]]:
    @wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return await fn(*args, **kwargs)
        except (InvalidInputError, NotFoundError) as exc:
            return _refused(exc)
    return run


class MemoryTools:
    """The tools' bodies for ``user_id``; ``k``: how many memories a search returns."""

    def __init__(self, memory: TrueMem, user_id: str, *, k: int = 5) -> None:
        if not isinstance(memory, TrueMem):
            raise InvalidInputError(
                f"the memory tools need a TrueMem, got {type(memory).__name__}")
        self.memory = memory
        if not isinstance(user_id, str) or not user_id.strip():
            raise InvalidInputError(f"user_id must be a non-empty str, got {user_id!r}")
        self.user_id = user_id
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive int, got {k!r}")
        self.k = k

    @_sync
    def save_memory(self, text: str, importance: int | None = None) -> str:
        return saved(self.memory.add_memory(self.user_id, text, importance=importance))

    @_async
    async def asave_memory(self, text: str, importance: int | None = None) -> str:
        return saved(await self.memory.aadd_memory(self.user_id, text, importance=importance))

    @_sync
    def search_memories(self, query: str) -> str:
        return found(self.memory.search(self.user_id, query, k=self.k))

    @_async
    async def asearch_memories(self, query: str) -> str:
        return found(await self.memory.asearch(self.user_id, query, k=self.k))

    @_sync
    def update_memory(self, memory_id: str, text: str, importance: int | None = None) -> str:
        return updated(self.memory.update_memory(
            self.user_id, memory_id, text=text, importance=importance))

    @_async
    async def aupdate_memory(
        self, memory_id: str, text: str, importance: int | None = None
    ) -> str:
        return updated(await self.memory.aupdate_memory(
            self.user_id, memory_id, text=text, importance=importance))

    @_sync
    def delete_memory(self, memory_id: str) -> str:
        self.memory.delete_memory(self.user_id, memory_id)
        return f"Deleted memory {memory_id}."

    @_async
    async def adelete_memory(self, memory_id: str) -> str:
        await self.memory.adelete_memory(self.user_id, memory_id)
        return f"Deleted memory {memory_id}."

    def pairs(self) -> list[tuple[str, Callable[..., str], Callable[..., Awaitable[str]]]]:
        """Each tool's name, sync body and async body, in the order an agent lists them."""
        return [(name, getattr(self, name), getattr(self, "a" + name)) for name in DESCRIPTIONS]
