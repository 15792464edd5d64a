"""``TrueMemRetriever``: a user's memories as LangChain documents."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from pydantic import ConfigDict, Field, field_validator

from truemem_core import InvalidInputError, ScoredMemory, SearchFilters, TrueMem

# What TrueMem.search accepts besides user_id and query: k, mode and the filters.
SEARCH_OPTIONS = frozenset({"k", "mode", *SearchFilters.__annotations__})


_USER = "_truemem_user_id"  # carries the call's user from ``invoke`` to the search


def _check(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - SEARCH_OPTIONS
    if unknown:
        raise InvalidInputError(f"TrueMem.search does not accept {sorted(unknown)}; "
                         f"it accepts {sorted(SEARCH_OPTIONS)}")
    return options


def to_document(hit: ScoredMemory) -> Document:
    memory = hit.memory
    return Document(page_content=memory.text, id=memory.id, metadata={
        "id": memory.id, "importance": memory.importance, "kind": memory.kind,
        "source": memory.source, "state": memory.state, "score": hit.score,
        "created_at": memory.created_at.isoformat(),
        "valid_from": (memory.valid_from or memory.created_at).isoformat(),  # when said
    })


class TrueMemRetriever(BaseRetriever):
    """The user's top ``k`` memories for a query (hybrid search), as documents.

    ``user_id=None`` searches the user each call names in
    ``config={"configurable": {"user_id": …}}``: one retriever for every user of an
    application, as ``with_truemem`` does.

    ``search_kwargs`` are passed to :meth:`TrueMem.search` on every call (for
    example ``{"kind": "episodic", "min_importance": 3}``); keyword arguments given
    to ``invoke`` override them for that call. Each document's metadata holds the
    memory's ``id``, ``importance``, ``kind``, ``source``, ``state``, ``created_at``
    and the search ``score``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: TrueMem
    user_id: str | None = None
    k: int | None = None
    """How many memories to return (default: the store's ``search_k`` setting)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("search_kwargs")
    @classmethod
    def _known_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check(value)

    def _call(self, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A search's user (put in by ``invoke``) and its options (the rest)."""
        user = kwargs.pop(_USER, None) or self._user(None)
        return user, self._options(kwargs)

    def _options(self, overrides: dict[str, Any]) -> dict[str, Any]:
        # A fresh dict per call: one call's filters never leak into the next.
        return _check({"k": self.k, **self.search_kwargs, **overrides})

    def _user(self, config: RunnableConfig | None) -> str:
        user = (self.user_id if self.user_id is not None
                else ensure_config(config).get("configurable", {}).get("user_id"))
        if user is None:
            raise InvalidInputError(
                "TrueMemRetriever needs a user_id: pass TrueMemRetriever(user_id=...), or "
                "config={'configurable': {'user_id': ...}} on each call")
        return str(user)

    # BaseRetriever hands ``_get_relevant_documents`` the call's keyword arguments but
    # not its config: the user goes along as one of them.
    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        return super().invoke(input, config, **kwargs, **{_USER: self._user(config)})

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        return await super().ainvoke(input, config, **kwargs, **{_USER: self._user(config)})

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        user, options = self._call(kwargs)
        hits = self.memory.search(user, query, **options)
        return [to_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        user, options = self._call(kwargs)
        hits = await self.memory.asearch(user, query, **options)
        return [to_document(hit) for hit in hits]
